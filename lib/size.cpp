#include "lib/size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "lib/error.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
constexpr const char* kSizeHelp = "expected a size such as 4096, 512M, 100G or 1.5T";

int unit_power(char unit)
{
    switch (std::toupper(static_cast<unsigned char>(unit))) {
    case 'K': return 1;
    case 'M': return 2;
    case 'G': return 3;
    case 'T': return 4;
    case 'P': return 5;
    default: return -1;
    }
}

// Split "1.5GiB" into the number and the unit text.
void split_number(std::string_view text, std::string& number, std::string& unit)
{
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    number = std::string(text.substr(0, i));
    unit = trim(text.substr(i));
}
}  // namespace

std::uint64_t parse_size(std::string_view raw)
{
    const std::string text = trim(raw);
    std::string number, unit;
    split_number(text, number, unit);
    if (number.empty() || number.find('.') != number.rfind('.') || number == ".")
        throw Error("invalid size " + quoted(text) + ": " + kSizeHelp);

    int power = 0;
    if (!unit.empty()) {
        power = unit_power(unit[0]);
        const std::string rest = unit.substr(1);
        const bool suffix_ok = rest.empty() || rest == "B" || rest == "iB" || rest == "b";
        if (unit == "B" || unit == "b")
            power = 0;
        else if (power < 0 || !suffix_ok)
            throw Error("invalid size " + quoted(text) + ": unknown unit " + quoted(unit) + "; " +
                        kSizeHelp);
    }
    const double value = std::strtod(number.c_str(), nullptr) * std::pow(1024.0, power);
    if (!(value < 18446744073709551615.0))
        throw Error("invalid size " + quoted(text) + ": too large");
    if (number.find('.') != std::string::npos && power == 0)
        throw Error("invalid size " + quoted(text) + ": a byte count must be a whole number");
    return static_cast<std::uint64_t>(std::llround(value));
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

ByteLimit ByteLimit::parse(std::string_view raw)
{
    const std::string text = trim(raw);
    ByteLimit limit;
    if (ends_with(text, "%")) {
        const std::string number = trim(std::string_view(text).substr(0, text.size() - 1));
        char* end = nullptr;
        const double percent = std::strtod(number.c_str(), &end);
        if (number.empty() || *end != '\0' || !(percent > 0.0 && percent <= 100.0))
            throw Error("invalid limit " + quoted(text) +
                        ": a percentage must be greater than 0% and at most 100%");
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
        return static_cast<std::uint64_t>(static_cast<double>(*fs_bytes) * percent / 100.0);
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

}  // namespace dlstage
