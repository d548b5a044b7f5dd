#include <boost/test/unit_test.hpp>

#include <limits>

#include "lib/error.hpp"
#include "lib/size.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;
using dlstage::test::error_of;

namespace {
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
}

BOOST_AUTO_TEST_SUITE(size)

BOOST_AUTO_TEST_CASE(plain_bytes_and_binary_units)
{
    BOOST_TEST(parse_size("4096") == 4096u);
    BOOST_TEST(parse_size("1K") == 1024u);
    BOOST_TEST(parse_size("512M") == 512ull << 20);
    BOOST_TEST(parse_size("100G") == 100ull << 30);
    BOOST_TEST(parse_size("100GiB") == 100ull << 30);
    BOOST_TEST(parse_size("100GB") == 100ull << 30);
    BOOST_TEST(parse_size("1.5T") == 3ull << 39);
    BOOST_TEST(parse_size(" 2 g ") == 2ull << 30);
    BOOST_TEST(parse_size("7B") == 7u);
    BOOST_TEST(parse_size("0") == 0u);
    BOOST_TEST(parse_size("1.5 GiB") == 3ull << 29);
    BOOST_TEST(parse_size("4kb") == 4096u);
}

BOOST_AUTO_TEST_CASE(decimals_are_exact_and_rounded_to_whole_bytes)
{
    BOOST_TEST(parse_size("1.1K") == 1126u);  // 1126.4
    BOOST_TEST(parse_size("0.5K") == 512u);
    BOOST_TEST(parse_size("0.0001K") == 0u);                         // 0.1024 bytes
    BOOST_TEST(parse_size("0.0005K") == 1u);                         // 0.512 bytes
    BOOST_TEST(parse_size("1.000000000000000000000001K") == 1024u);  // digits past 64 bits are dropped
    // 2^64 - 1 bytes exactly, and one byte more.
    BOOST_TEST(parse_size("18446744073709551615") == kMax);
    BOOST_TEST(parse_size("16383.999999999999P") == 18446744073709550490u);
    BOOST_TEST(parse_size("16383P") == 16383ull << 50);
    for (const char* big :
         {"18446744073709551616", "16384P", "16383.9999999999999999P", "99999999999999999999999G", "17179869184T"}) {
        BOOST_TEST_CONTEXT(big)
        {
            BOOST_TEST(error_of([&] { parse_size(big); }) ==
                       "invalid size '" + std::string(big) + "': too large (the largest size is 16383P)");
        }
    }
}

BOOST_AUTO_TEST_CASE(rejects_garbage_with_a_helpful_message)
{
    for (const char* bad :
         {"",    "G",   "abc", "10X",  "10GX",   "1.2.3", "-5",  "0.5",  "4Mx", "1e3",   "-1",    "0x10", "1..5", ".",
          "nan", "inf", "+5",  "1 0G", "10 G B", "5.G",   ".5G", "1,5G", "1.5", "4 M x", "4MiBB", "4Ki",  "1\n0"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_CHECK_THROW(parse_size(bad), Error);
        }
    }
    try {
        parse_size("10Q");
        BOOST_FAIL("no exception");
    } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()).find("512M") != std::string::npos);
    }
    BOOST_TEST(error_of([] { parse_size("4Mx"); }) ==
               "invalid size '4Mx': unknown unit 'Mx'; expected a size such as 4096, 512M, 100G or 1.5T");
    BOOST_TEST(error_of([] { parse_size("-1"); }) ==
               "invalid size '-1': expected a size such as 4096, 512M, 100G or 1.5T");
    BOOST_TEST(error_of([] { parse_size("0.5"); }) == "invalid size '0.5': a byte count must be a whole number");
    BOOST_TEST(error_of([] { parse_size(std::string_view("4\0M", 3)); }) ==
               "invalid size '4\\x00M': unknown unit '\\x00M'; expected a size such as 4096, 512M, 100G or 1.5T");
}

BOOST_AUTO_TEST_CASE(ranges_name_their_bounds)
{
    BOOST_TEST(parse_size("4K", 4096, 1ull << 30) == 4096u);
    BOOST_TEST(parse_size("1G", 4096, 1ull << 30) == 1ull << 30);
    BOOST_TEST(error_of([] { parse_size("1K", 4096, 1ull << 30); }) ==
               "invalid size '1K': expected a size from 4.0 KiB to 1.0 GiB");
    BOOST_TEST(error_of([] { parse_size("512", 1ull << 20, kMax); }) ==
               "invalid size '512': expected a size of at least 1.0 MiB");
}

BOOST_AUTO_TEST_CASE(format_is_human_readable)
{
    BOOST_TEST(format_size(0) == "0 B");
    BOOST_TEST(format_size(1023) == "1023 B");
    BOOST_TEST(format_size(1536) == "1.5 KiB");
    BOOST_TEST(format_size(150ull << 30) == "150.0 GiB");
}

BOOST_AUTO_TEST_CASE(limits_absolute_and_percent)
{
    const ByteLimit half = ByteLimit::parse("50%");
    BOOST_TEST((half.kind == ByteLimit::Kind::Percent));
    BOOST_TEST(!half.resolve(std::nullopt).has_value());
    BOOST_TEST(*half.resolve(1000) == 500u);
    BOOST_TEST(half.str() == "50%");

    const ByteLimit abs = ByteLimit::parse("100G");
    BOOST_TEST(*abs.resolve(std::nullopt) == 100ull << 30);
    BOOST_TEST(!ByteLimit{}.resolve(1000).has_value());

    BOOST_TEST(ByteLimit::parse("12.5 %").percent == 12.5);
    BOOST_TEST(ByteLimit::parse("100%").percent == 100.0);
    // 100% of the largest file system does not overflow when resolved.
    BOOST_TEST(*ByteLimit::parse("100%").resolve(kMax) == kMax);
    BOOST_TEST(*ByteLimit::parse("50%").resolve(kMax) == kMax / 2 + 1);  // as a double: 2^63
    for (const char* bad : {"0%", "101%", "%", "x%", "-1%", "50 %%", "1e1%", "nan%", "inf%", "100.0000001%",
                            "99999999999999999999999%", "+5%", "5%x", "0x10%"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_CHECK_THROW(ByteLimit::parse(bad), Error);
        }
    }
}

BOOST_AUTO_TEST_CASE(shares_are_percentages)
{
    BOOST_TEST(parse_share("90%") == 0.9);
    BOOST_TEST(parse_share(" 87.5 % ") == 0.875);
    BOOST_TEST(parse_share("100%") == 1.0);
    for (const char* bad : {"90", "0%", "101%", "-5%", "ninety", "10G", ""})
        BOOST_CHECK_THROW(parse_share(bad), Error);
}

BOOST_AUTO_TEST_CASE(sbatch_mem_is_mib_without_a_unit_and_rounds_up)
{
    BOOST_TEST(slurm_memory_mib("4096").value() == 4096u);
    BOOST_TEST(slurm_memory_mib("4G").value() == 4096u);
    BOOST_TEST(slurm_memory_mib("1500K").value() == 2u);
    BOOST_TEST(slurm_memory_mib(" 2t ").value() == 2u * 1024 * 1024);
    BOOST_TEST(!slurm_memory_mib(""));
    BOOST_TEST(!slurm_memory_mib("lots"));
    BOOST_TEST(!slurm_memory_mib("-4G"));
}

BOOST_AUTO_TEST_SUITE_END()
