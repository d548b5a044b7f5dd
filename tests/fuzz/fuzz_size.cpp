// parse_size, ByteLimit::parse and the number parsers (lib/number.hpp):
// strict, exact, never above UINT64_MAX, and what they accept reads back
// the same.
#include <cmath>
#include <limits>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;
using fuzz::expect;

namespace {
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

void check_size(const std::string& text)
{
    std::uint64_t bytes = 0;
    try {
        bytes = parse_size(text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return;
    }
    expect(parse_size(std::to_string(bytes)) == bytes, "a size reads back from its digits", text);
    expect(parse_size(std::to_string(bytes) + "B") == bytes, "a size reads back as N B", text);
    expect(fuzz::refuses([&] { parse_size(text + "x"); }, text), "trailing text is refused", text);
    expect(fuzz::refuses([&] { parse_size("-" + text); }, text), "a sign is refused", text);
    expect(parse_size(text, bytes, bytes) == bytes, "a size is within [itself, itself]", text);
    if (bytes < kMax)
        expect(fuzz::refuses([&] { parse_size(text, bytes + 1, kMax); }, text), "a size below the minimum is refused",
               text);
    // format_size rounds to a tenth of its unit; it reads back within that.
    if (bytes < (16383ull << 50)) {
        const std::uint64_t back = parse_size(format_size(bytes));
        const double unit = std::pow(1024.0, std::floor(std::log(std::max<double>(bytes, 1)) / std::log(1024.0)));
        expect(std::fabs(static_cast<double>(back) - static_cast<double>(bytes)) <= 0.051 * unit + 1,
               "format_size reads back within its rounding", text);
    }
}

void check_limit(const std::string& text)
{
    ByteLimit limit;
    try {
        limit = ByteLimit::parse(text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return;
    }
    if (limit.kind == ByteLimit::Kind::Bytes) {
        expect(limit.bytes == parse_size(text), "a byte limit is its size", text);
        return;
    }
    expect(limit.kind == ByteLimit::Kind::Percent, "a limit is bytes or a percentage", text);
    expect(limit.percent > 0 && limit.percent <= 100, "a percentage is in (0, 100]", text);
    for (const std::uint64_t total : {std::uint64_t{0}, std::uint64_t{1000}, kMax / 3, kMax}) {
        const std::uint64_t share = *limit.resolve(total);  // UBSan: no float-to-int overflow
        expect(share <= total, "a share is at most the whole", text);
    }
    // str() prints %g: an exponent below 0.0001%, six significant digits.
    if (limit.percent >= 0.0001) {
        const double back = ByteLimit::parse(limit.str()).percent;
        expect(std::fabs(back - limit.percent) <= limit.percent * 1e-5, "a percentage reads back from str()", text);
    }
}

void check_numbers(const std::string& text)
{
    try {
        const std::uint64_t n = parse_count(text, 1, 256);
        expect(n >= 1 && n <= 256, "a count is in its range", text);
        expect(parse_count(std::to_string(n), 1, 256) == n, "a count reads back from its digits", text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
    }
    try {
        const std::uint64_t n = parse_count(text, 0, kMax);
        expect(parse_count(std::to_string(n), 0, kMax) == n, "any 64-bit count reads back", text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
    }
    try {
        const double s = parse_seconds(text, 0.1, 86400);
        expect(std::isfinite(s) && s >= 0.1 && s <= 86400, "seconds are finite and in range", text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
    }
    if (const auto d = scan_decimal(text)) {
        const std::size_t dot = text.find('.');
        expect(!text.empty() && text.find_first_not_of("0123456789.") == std::string::npos &&
                   text.find('.', dot == std::string::npos ? dot : dot + 1) == std::string::npos && dot != 0 &&
                   (dot == std::string::npos || dot + 1 < text.size()),
               "a decimal is digits, or digits '.' digits", text);
        expect(d->fraction_digits <= Decimal::kMaxFractionDigits, "fraction digits are capped", text);
    }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(fuzz::text_of(data, size));
    check_size(text);
    check_limit(text);
    check_numbers(text);
    return 0;
}
