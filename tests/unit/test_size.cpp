#include <boost/test/unit_test.hpp>

#include "lib/error.hpp"
#include "lib/size.hpp"

using namespace dlstage;

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
}

BOOST_AUTO_TEST_CASE(rejects_garbage_with_a_helpful_message)
{
    for (const char* bad : {"", "G", "abc", "10X", "10GX", "1.2.3", "-5", "0.5"}) {
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

    for (const char* bad : {"0%", "101%", "%", "x%", "-1%"}) {
        BOOST_TEST_CONTEXT(bad)
        {
            BOOST_CHECK_THROW(ByteLimit::parse(bad), Error);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
