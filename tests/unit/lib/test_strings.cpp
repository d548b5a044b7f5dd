#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <ctime>
#include <string>

#include "lib/error.hpp"
#include "lib/strings.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(strings)

BOOST_AUTO_TEST_CASE(split_keeps_empty_parts)
{
    const auto parts = split("a,,b,", ',');
    BOOST_TEST(parts.size() == 4u);
    BOOST_TEST(parts[1].empty());
    BOOST_TEST(parts[2] == "b");
    BOOST_TEST(join(parts, "|") == "a||b|");
}

BOOST_AUTO_TEST_CASE(quoted_shows_control_bytes)
{
    BOOST_TEST(quoted("a b") == "'a b'");
    BOOST_TEST(quoted(std::string("x\ny\x1b", 4)) == "'x\\x0ay\\x1b'");
    BOOST_TEST(printable(std::string("a\r\0b\x7f\xc3\xa9", 7)) == "a\\x0d\\x00b\\x7f\xc3\xa9");  // UTF-8 stays
}

BOOST_AUTO_TEST_CASE(suggests_only_close_matches)
{
    const std::vector<std::string> keys = {"path", "scope", "cleanup", "max_bytes", "max_inodes"};
    BOOST_TEST(closest_match("max_byte", keys) == "max_bytes");
    BOOST_TEST(closest_match("scop", keys) == "scope");
    BOOST_TEST(closest_match("colour", keys).empty());
    BOOST_TEST(did_you_mean("xyz", keys).empty());
    BOOST_TEST(did_you_mean("clenaup", keys) == " (did you mean 'cleanup'?)");
}

BOOST_AUTO_TEST_CASE(simple_names)
{
    BOOST_TEST(is_simple_name("imagenet-1k", false));
    BOOST_TEST(is_simple_name("coco.2017", true));
    BOOST_TEST(!is_simple_name("coco.2017", false));
    BOOST_TEST(!is_simple_name("-x", true));
    BOOST_TEST(!is_simple_name("", true));
    BOOST_TEST(!is_simple_name("a b", true));
    BOOST_TEST(!is_simple_name("a/b", true));
}

BOOST_AUTO_TEST_CASE(printable_escapes_what_a_terminal_would_act_on)
{
    BOOST_TEST(printable("plain text, caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac") ==
               "plain text, caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac");
    BOOST_TEST(printable("a\nb\x1b[2J\x7f") == "a\\x0ab\\x1b[2J\\x7f");
    BOOST_TEST(printable("x\xc2\x9b"
                         "2J") == "x\\xc2\\x9b2J");  // U+009B, CSI
    BOOST_TEST(printable("\xe2\x80\xae"
                         "evil") == "\\xe2\\x80\\xaeevil");        // U+202E, right-to-left override
    BOOST_TEST(printable("\xe2\x81\xa6x") == "\\xe2\\x81\\xa6x");  // U+2066
    BOOST_TEST(printable("raw \x9b byte, cut \xe2\x80") == "raw \\x9b byte, cut \\xe2\\x80");
    BOOST_TEST(printable("overlong \xc0\xaf") == "overlong \\xc0\\xaf");
    BOOST_TEST(quoted("a\nb") == "'a\\x0ab'");
}

BOOST_AUTO_TEST_CASE(nul_ended_fields_read_back_what_was_written_and_refuse_a_cut_one)
{
    std::string text;
    for (const char* field : {"a b\n", "", "999"})
        append_nul_ended(text, field);
    BOOST_TEST(text.size() == 10u);
    const auto fields = nul_ended_fields(text);
    BOOST_REQUIRE(fields.has_value());
    BOOST_TEST((*fields == std::vector<std::string>{"a b\n", "", "999"}));
    BOOST_TEST(nul_ended_fields("")->empty());
    BOOST_TEST(!nul_ended_fields(text.substr(0, text.size() - 1)).has_value());
}

BOOST_AUTO_TEST_CASE(split_parent_drops_trailing_slashes_first)
{
    using Split = std::pair<std::string, std::string>;
    BOOST_TEST((split_parent("/a/b/") == Split{"/a", "b"}));
    BOOST_TEST((split_parent("/b") == Split{"/", "b"}));
    BOOST_TEST((split_parent("b") == Split{".", "b"}));
}

BOOST_AUTO_TEST_CASE(base_name_and_parent_in_tree)
{
    BOOST_TEST(base_name("/a/b") == "b");
    BOOST_TEST(base_name("b") == "b");
    BOOST_TEST(parent_in_tree("a/b/c") == "a/b");
    BOOST_TEST(parent_in_tree("c") == "");
}

BOOST_AUTO_TEST_CASE(a_base_name_as_a_c_string_ends_where_the_name_does)
{
    const std::string_view path = "class1/img 1.JPEG/trailing";
    BOOST_TEST(std::string(BaseNameZ(path.substr(0, 17)).c_str()) == "img 1.JPEG");
    BOOST_TEST(std::string(BaseNameZ("x").c_str()) == "x");
    BOOST_CHECK_THROW(BaseNameZ(std::string(PATH_MAX, 'n')), dlstage::Error);
}

BOOST_AUTO_TEST_CASE(shown_path_quotes_control_bytes_and_shortens_long_paths)
{
    BOOST_TEST(shown_path("/dev/shm/a b") == "/dev/shm/a b");
    BOOST_TEST(shown_path("/x/new\nline") == "'/x/new\\x0aline'");
    const std::string shown = shown_path("/" + std::string(1000, 'd'));
    BOOST_TEST(shown.size() == 403u);
    BOOST_TEST(shown.find("...") == 200u);
}

// Sets TZ for one test and puts the old one back.
struct TimeZone {
    std::string old;
    bool had;
    explicit TimeZone(const char* zone) : had(std::getenv("TZ") != nullptr)
    {
        if (had)
            old = std::getenv("TZ");
        ::setenv("TZ", zone, 1);
        ::tzset();
    }
    ~TimeZone()
    {
        had ? ::setenv("TZ", old.c_str(), 1) : ::unsetenv("TZ");
        ::tzset();
    }
};

BOOST_AUTO_TEST_CASE(days_and_moments_are_local_stamps_are_utc)
{
    const std::int64_t t = 1794982000;  // 2026-11-18 06:06:40 UTC
    {
        TimeZone zone("UTC");
        BOOST_TEST(day_text(0) == "1970-01-01");
        BOOST_TEST(day_text(t) == "2026-11-18");
        BOOST_TEST(moment_text(t) == "2026-11-18T06:06:40");
    }
    {
        TimeZone zone("PST8PDT");  // the west of the US: still the 17th there
        BOOST_TEST(day_text(t) == "2026-11-17");
        BOOST_TEST(moment_text(t) == "2026-11-17T22:06:40");
        BOOST_TEST(utc_stamp(t) == "20261118T060640Z");
    }
}

BOOST_AUTO_TEST_SUITE_END()
