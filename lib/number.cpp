#include "lib/number.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "lib/error.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
bool is_digits(std::string_view text)
{
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// "0.1" and "86400", not "1.000000e-01".
std::string shortest(double value)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
}

[[noreturn]] void invalid(std::string_view text, const std::string& expected)
{
    throw Error("invalid value " + quoted(text) + ": expected " + expected);
}
}  // namespace

std::optional<Decimal> scan_decimal(std::string_view text)
{
    const std::size_t dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view fraction = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (!is_digits(whole) || (dot != std::string_view::npos && !is_digits(fraction)))
        return std::nullopt;
    Decimal d;
    const auto [end, err] = std::from_chars(whole.data(), whole.data() + whole.size(), d.whole);
    (void)end;  // is_digits: every character is part of the number
    d.whole_overflows = err == std::errc::result_out_of_range;
    for (const char c : fraction.substr(0, Decimal::kMaxFractionDigits)) {
        d.fraction = d.fraction * 10 + static_cast<std::uint64_t>(c - '0');
        ++d.fraction_digits;
    }
    return d;
}

double Decimal::value() const
{
    if (whole_overflows)
        return HUGE_VAL;
    return static_cast<double>(whole) +
           static_cast<double>(fraction) / std::pow(10.0, static_cast<double>(fraction_digits));
}

std::uint64_t parse_count(std::string_view raw, std::uint64_t min, std::uint64_t max)
{
    const std::string text = trim(raw);
    const auto d = scan_decimal(text);
    if (!d || d->fraction_digits > 0 || d->whole_overflows || d->whole < min || d->whole > max)
        invalid(text, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return d->whole;
}

bool read_count(std::string_view text, std::uint64_t& value)
{
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return !text.empty() && ec == std::errc() && ptr == end;
}

double parse_seconds(std::string_view raw, double min, double max)
{
    const std::string text = trim(raw);
    const auto d = scan_decimal(text);
    const double seconds = d ? d->value() : 0.0;
    if (!d || !(seconds >= min && seconds <= max))
        invalid(text, "a number of seconds from " + shortest(min) + " to " + shortest(max));
    return seconds;
}

std::string slurm_number(std::string_view text)
{
    return std::to_string(parse_count(text, 1, kMaxSlurmNumber));
}

bool is_job_id(std::string_view text)
{
    const auto number = scan_decimal(text);
    return number && number->fraction_digits == 0 && !number->whole_overflows && number->whole >= 1 &&
           number->whole <= kMaxSlurmNumber && text.front() != '0';
}

bool job_id_less(const std::string& a, const std::string& b)
{
    return a.size() != b.size() ? a.size() < b.size() : a < b;
}

}  // namespace dlstage
