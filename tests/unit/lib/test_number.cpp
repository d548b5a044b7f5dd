#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;
using dlstage::test::error_of;

BOOST_AUTO_TEST_SUITE(number)

BOOST_AUTO_TEST_CASE(counts_are_plain_digits_within_their_range)
{
    BOOST_TEST(parse_count("16", 1, 256) == 16u);
    BOOST_TEST(parse_count(" 007 ", 1, 256) == 7u);
    BOOST_TEST(parse_count("18446744073709551615", 0, std::numeric_limits<std::uint64_t>::max()) ==
               std::numeric_limits<std::uint64_t>::max());
    for (const char* bad : {"", "4x", "x4", "-1", "+5", "0x10", "1e3", "1.0", "1.", ".5", "1 6", "0", "257",
                            "18446744073709551616", "99999999999999999999999999", "nan", "inf", "\xef\xbc\x91"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_TEST(error_of([&] { parse_count(bad, 1, 256); }) ==
                       "invalid value '" + std::string(bad) + "': expected a whole number from 1 to 256");
        }
    }
    BOOST_TEST(error_of([] { parse_count("\t", 1, 2); }) == "invalid value '': expected a whole number from 1 to 2");
    BOOST_TEST(error_of([] { parse_count("1\n2", 1, 2); }) ==
               "invalid value '1\\x0a2': expected a whole number from 1 to 2");
}

BOOST_AUTO_TEST_CASE(seconds_are_decimals_without_exponent_or_sign)
{
    BOOST_TEST(parse_seconds("5", 0.1, 86400) == 5.0);
    BOOST_TEST(parse_seconds("0.25", 0.1, 86400) == 0.25);
    BOOST_TEST(parse_seconds("86400", 0.1, 86400) == 86400.0);
    for (const char* bad : {"", "1e3", "-1", "+1", "nan", "inf", "0.05", "86400.5", "1,5", "1.5s", ".5", "5.", "0x1p3",
                            "1..5", "99999999999999999999999"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_TEST(error_of([&] { parse_seconds(bad, 0.1, 86400); }) ==
                       "invalid value '" + std::string(bad) + "': expected a number of seconds from 0.1 to 86400");
        }
    }
}

BOOST_AUTO_TEST_CASE(decimals_keep_whole_and_fraction_apart)
{
    const auto d = scan_decimal("12.050");
    BOOST_TEST_REQUIRE(d.has_value());
    BOOST_TEST(d->whole == 12u);
    BOOST_TEST(d->fraction == 50u);
    BOOST_TEST(d->fraction_digits == 3u);
    BOOST_TEST(d->value() == 12.05);
    BOOST_TEST(scan_decimal("18446744073709551616")->whole_overflows);
    // Digits beyond what 64 bits hold are checked, then dropped.
    BOOST_TEST(scan_decimal("1." + std::string(30, '5'))->fraction_digits == Decimal::kMaxFractionDigits);
    BOOST_TEST(!scan_decimal("1." + std::string(30, '5') + "x"));
    for (const char* bad : {"", ".", "1.", ".1", "1.2.3", " 1", "1 ", "-1", "1e2"})
        BOOST_TEST(!scan_decimal(bad), bad);
}

BOOST_AUTO_TEST_CASE(a_job_id_is_written_as_slurm_writes_it)
{
    for (const char* id : {"1", "42", "4294967294"})
        BOOST_TEST(is_job_id(id), id);
    for (const char* id : {"", "0", "042", "-1", "4.2", "1e3", "42x", "99999999999999999999", "user"})
        BOOST_TEST(!is_job_id(id), id);
    BOOST_TEST(job_id_less("9", "10"));
    BOOST_TEST(!job_id_less("10", "9"));
    BOOST_TEST(job_id_less("10", "11"));
}

BOOST_AUTO_TEST_SUITE_END()
