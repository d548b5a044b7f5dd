#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include "lib/error.hpp"
#include "lib/job_layout.hpp"
#include "lib/record_field.hpp"
#include "lib/state_record.hpp"
#include "tests/unit/error_of.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(state_record)

BOOST_AUTO_TEST_CASE(paths_are_per_job_and_node)
{
    BOOST_TEST(node_record_path("/s", "12", "n1", "prolog") == "/s/jobs/12/n1.prolog.toml");
}

BOOST_AUTO_TEST_CASE(round_trip_creates_parents_and_leaves_no_temporary)
{
    test::TempDir dir;
    const std::string path = node_record_path(dir.path(), "7", "n2", "prolog");
    write_record(path, toml::table{{"status", "accepted"}, {"uid", 1000}});
    write_record(path, toml::table{{"status", "refused"}, {"uid", 1000}});  // replaced whole
    const toml::table back = read_record(path);
    BOOST_TEST(back["status"].value_or(std::string()) == "refused");
    BOOST_TEST(back["uid"].value_or(0) == 1000);

    int entries = 0;
    DIR* d = opendir(job_state_dir(dir.path(), "7").c_str());
    while (const dirent* e = readdir(d))
        entries += e->d_name[0] != '.';
    closedir(d);
    BOOST_TEST(entries == 1);
}

BOOST_AUTO_TEST_CASE(records_are_parsed_from_text_and_files_alike)
{
    BOOST_TEST(parse_record("state = 'ready'\n", "r.toml")["state"].value_or(std::string()) == "ready");
    BOOST_TEST(test::error_of([] { parse_record("state = [", "r.toml"); }).rfind("cannot read state record r.toml: ", 0) ==
               0u);
    test::TempDir dir;
    BOOST_TEST(read_record(dir.write("empty.toml", "")).empty());
    const std::string broken = dir.write("broken.toml", "garbage [");
    BOOST_TEST(test::error_of([&] { read_record(broken); }).rfind("cannot read state record " + broken + ": ", 0) ==
               0u);
    BOOST_TEST(test::error_of([&] { read_record(dir / "missing.toml"); }) ==
               "cannot read state record " + (dir / "missing.toml") + ": No such file or directory");
}

// Found by tests/fuzz: value_or<int64_t> on 1e300 is an overflowing cast.
BOOST_AUTO_TEST_CASE(integer_fields_are_read_by_type_never_converted)
{
    const toml::table r = parse_record("a = 7\nb = 1e300\nc = 'x'\nd = 2.0\n", "r.toml");
    BOOST_TEST(*integer_field(r, "a") == 7);
    BOOST_TEST(!integer_field(r, "b").has_value());
    BOOST_TEST(!integer_field(r, "c").has_value());
    BOOST_TEST(!integer_field(r, "d").has_value());
    BOOST_TEST(!integer_field(r, "missing").has_value());
}

BOOST_AUTO_TEST_CASE(a_ready_marker_needs_a_path_and_counts)
{
    const auto marker = [](const std::string& text) { return ready_marker_of(parse_record(text, "m.toml"), "m.toml"); };
    const ReadyMarker good = marker("path = '/dev/shm/x/d'\nbytes = 10\nfiles = 2\n");
    BOOST_TEST(good.path == "/dev/shm/x/d");
    BOOST_TEST(good.bytes == 10u);
    BOOST_TEST(good.files == 2u);
    BOOST_TEST(test::error_of([&] { marker("bytes = 10\nfiles = 2\n"); }) == "ready marker m.toml has no path");
    BOOST_TEST(test::error_of([&] { marker("path = '/p'\nbytes = -1\nfiles = 2\n"); }) ==
               "ready marker m.toml has no valid 'bytes' (a count of 0 or more)");
    BOOST_TEST(test::error_of([&] { marker("path = '/p'\nbytes = 1\nfiles = 3.7e19\n"); }) ==
               "ready marker m.toml has no valid 'files' (a count of 0 or more)");
}

BOOST_AUTO_TEST_CASE(unwritable_location_names_the_path)
{
    test::TempDir dir;
    const std::string blocker = dir.write("file", "x");
    try {
        write_record(blocker + "/jobs/1/n1.prolog.toml", toml::table{});
        BOOST_FAIL("no exception");
    } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()).find(blocker) != std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
