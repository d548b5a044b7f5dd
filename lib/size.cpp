#include "lib/size.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
constexpr const char* kSizeHelp = "expected a size such as 4096, 512M, 100G or 1.5T";

[[noreturn]] void invalid(const std::string& text, const std::string& why)
{
    throw Error("invalid size " + quoted(text) + ": " + why);
}

// The power of 1024 a unit stands for: "" and "B" bytes, "K", "KB", "KiB"
// kibibytes and so on (either case for the letter); -1 for anything else.
int unit_power(std::string_view unit)
{
    if (unit.empty() || unit == "B" || unit == "b")
        return 0;
    const std::string_view rest = unit.substr(1);
    if (!rest.empty() && rest != "B" && rest != "iB" && rest != "b")
        return -1;
    const std::string_view letters = "KMGTP";
    const std::size_t at = letters.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    return at == std::string_view::npos ? -1 : static_cast<int>(at) + 1;
}

// number x 1024^power rounded to whole bytes, exactly (no doubles), or
// nothing if it does not fit in 64 bits.
std::optional<std::uint64_t> scaled(const Decimal& number, int power)
{
    const unsigned shift = 10u * static_cast<unsigned>(power);
    if (number.whole_overflows || number.whole > (std::numeric_limits<std::uint64_t>::max() >> shift))
        return std::nullopt;
    const std::uint64_t whole = number.whole << shift;
    // fraction < 10^19 and shift <= 50: the products fit in 128 bits.
    using Wide = unsigned __int128;
    Wide denominator = 1;
    for (unsigned i = 0; i < number.fraction_digits; ++i)
        denominator *= 10;
    const Wide part = ((Wide(number.fraction) << shift) * 2 + denominator) / (2 * denominator);
    if (part > std::numeric_limits<std::uint64_t>::max() - whole)
        return std::nullopt;
    return whole + static_cast<std::uint64_t>(part);
}

std::uint64_t share_of(std::uint64_t total, double percent)
{
    // 100% of a file system near 2^64 bytes rounds up to 2^64 as a double,
    // which does not convert back to 64 bits.
    const double share = static_cast<double>(total) * percent / 100.0;
    if (share >= 18446744073709551616.0)
        return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(share);
}
}  // namespace

std::uint64_t parse_size(std::string_view raw)
{
    const std::string text = trim(raw);
    const std::size_t unit_at = std::min(text.find_first_not_of("0123456789."), text.size());
    const auto number = scan_decimal(std::string_view(text).substr(0, unit_at));
    if (!number)
        invalid(text, kSizeHelp);
    const std::string unit = trim(std::string_view(text).substr(unit_at));
    const int power = unit_power(unit);
    if (power < 0)
        invalid(text, "unknown unit " + quoted(unit) + "; " + kSizeHelp);
    if (power == 0 && number->fraction_digits > 0)
        invalid(text, "a byte count must be a whole number");
    const auto bytes = scaled(*number, power);
    if (!bytes)
        invalid(text, "too large (the largest size is 16383P)");
    return *bytes;
}

std::optional<std::uint64_t> slurm_memory_mib(std::string_view text)
{
    const std::string memory = trim(std::string(text));
    if (memory.empty())
        return std::nullopt;
    try {
        const bool has_unit = std::isalpha(static_cast<unsigned char>(memory.back()));
        constexpr std::uint64_t mib = 1024 * 1024;
        return (parse_size(has_unit ? memory : memory + "M") + mib - 1) / mib;
    } catch (const Error&) {
        return std::nullopt;
    }
}

std::uint64_t parse_size(std::string_view text, std::uint64_t min, std::uint64_t max)
{
    const std::uint64_t bytes = parse_size(text);
    if (bytes < min || bytes > max) {
        const bool no_max = max == std::numeric_limits<std::uint64_t>::max();
        invalid(trim(text), no_max ? "expected a size of at least " + format_size(min)
                                   : "expected a size from " + format_size(min) + " to " + format_size(max));
    }
    return bytes;
}

std::string format_rate(std::uint64_t bytes, double seconds)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB/s", seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0);
    return buf;
}

std::string format_size(std::uint64_t bytes)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 5) {
        value /= 1024.0;
        ++unit;
    }
    char buf[32];
    if (unit == 0)
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
    return buf;
}

std::string slurm_size(std::uint64_t bytes)
{
    static const char units[] = {'K', 'M', 'G', 'T', 'P', 'E'};
    if (bytes < 1024)
        return std::to_string(bytes);
    int unit = 0;
    std::uint64_t whole = bytes;
    while (whole >= 1024 * 1024 && unit < 5) {
        whole /= 1024;
        ++unit;
    }
    const double scale = std::pow(1024.0, unit + 1);
    char buf[32];
    if (bytes % static_cast<std::uint64_t>(scale) == 0)
        std::snprintf(buf, sizeof buf, "%llu%c",
                      static_cast<unsigned long long>(bytes / static_cast<std::uint64_t>(scale)), units[unit]);
    else
        std::snprintf(buf, sizeof buf, "%.2f%c", static_cast<double>(bytes) / scale, units[unit]);
    return buf;
}

ByteLimit ByteLimit::parse(std::string_view raw)
{
    const std::string text = trim(raw);
    ByteLimit limit;
    if (ends_with(text, "%")) {
        const auto number = scan_decimal(trim(std::string_view(text).substr(0, text.size() - 1)));
        const double percent = number ? number->value() : 0.0;
        if (!(percent > 0.0 && percent <= 100.0))
            throw Error("invalid limit " + quoted(text) +
                        ": a percentage must be greater than 0% and at most 100%, such as 50%");
        limit.kind = Kind::Percent;
        limit.percent = percent;
        return limit;
    }
    return of_bytes(parse_size(text));
}

ByteLimit ByteLimit::of_bytes(std::uint64_t bytes)
{
    ByteLimit limit;
    limit.kind = Kind::Bytes;
    limit.bytes = bytes;
    return limit;
}

std::optional<std::uint64_t> ByteLimit::resolve(std::optional<std::uint64_t> fs_bytes) const
{
    switch (kind) {
    case Kind::None: return std::nullopt;
    case Kind::Bytes: return bytes;
    case Kind::Percent:
        if (!fs_bytes)
            return std::nullopt;
        return share_of(*fs_bytes, percent);
    }
    return std::nullopt;
}

std::string ByteLimit::str() const
{
    switch (kind) {
    case Kind::None: return "none";
    case Kind::Bytes: return format_size(bytes);
    case Kind::Percent: {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g%%", percent);
        return buf;
    }
    }
    return "none";
}

double parse_share(std::string_view text)
{
    ByteLimit share;
    try {
        share = ByteLimit::parse(text);
    } catch (const Error&) {
        share = {};
    }
    if (share.kind != ByteLimit::Kind::Percent)
        throw Error("invalid value " + quoted(text) +
                    ": expected a percentage greater than 0% and at most 100%, such as \"90%\"");
    return share.percent / 100.0;
}

}  // namespace dlstage
