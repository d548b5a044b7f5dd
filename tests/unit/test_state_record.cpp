#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include "lib/error.hpp"
#include "lib/state_record.hpp"
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
