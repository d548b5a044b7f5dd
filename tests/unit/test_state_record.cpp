#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/state_record.hpp"
#include "lib/sys/bounded.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;

namespace {
int entries(const std::string& path)
{
    int n = 0;
    DIR* d = opendir(path.c_str());
    while (const dirent* e = readdir(d))
        n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
    return n;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(state_record)

BOOST_AUTO_TEST_CASE(paths_are_per_job_and_node)
{
    BOOST_TEST(node_record_path("/s", "12", "n1", "prolog") == "/s/jobs/12/n1.prolog.toml");
}

BOOST_AUTO_TEST_CASE(round_trip_replaces_whole_and_leaves_no_temporary)
{
    test::TempDir dir;
    const std::string path = dir / "n2.prolog.toml";
    write_record(path, toml::table{{"status", "accepted"}, {"uid", 1000}});
    write_record(path, toml::table{{"status", "refused"}, {"uid", 1000}});  // replaced whole
    const toml::table back = read_record(path);
    BOOST_TEST(back["status"].value_or(std::string()) == "refused");
    BOOST_TEST(back["uid"].value_or(0) == 1000);
    BOOST_TEST(entries(dir.path()) == 1);
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

BOOST_AUTO_TEST_CASE(records_by_fd_get_exactly_their_mode_and_never_follow_a_planted_link)
{
    test::TempDir dir;
    const std::string victim = dir.write("victim", "precious");
    // A user who can write the directory plants links under every name they
    // can guess: the record replaces the entry, the target stays as it was.
    BOOST_REQUIRE(symlink(victim.c_str(), (dir / "n1.prolog.toml").c_str()) == 0);
    const int fd = open(dir.path().c_str(), O_PATH | O_DIRECTORY);
    const mode_t old_mask = umask(0);
    write_record_at(fd, dir.path(), "n1.prolog.toml", toml::table{{"status", "ready"}}, 0600);
    umask(old_mask);
    close(fd);
    struct stat st {};
    BOOST_REQUIRE(lstat((dir / "n1.prolog.toml").c_str(), &st) == 0);
    BOOST_TEST(S_ISREG(st.st_mode));
    BOOST_TEST((st.st_mode & 07777) == 0600u);
    std::ifstream in(victim);
    std::string content;
    std::getline(in, content);
    BOOST_TEST(content == "precious");
    BOOST_TEST(entries(dir.path()) == 2);
}

BOOST_AUTO_TEST_CASE(reading_refuses_fifos_links_and_huge_files_without_blocking)
{
    test::TempDir dir;
    BOOST_REQUIRE(mkfifo((dir / "fifo.toml").c_str(), 0644) == 0);
    const std::string real = dir.write("real.toml", "status = \"ready\"\n");
    BOOST_REQUIRE(symlink(real.c_str(), (dir / "link.toml").c_str()) == 0);
    dir.write("huge.toml", "x = \"" + std::string(kMaxRecordBytes, 'a') + "\"\n");
    dir.write("bad.toml", "status = \n");
    const auto error_of = [](const std::string& path) {
        try {
            read_record(path);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // A fifo with no writer would block an open without O_NONBLOCK: read
    // in a bounded child, so that blocking fails the test instead of
    // hanging the run.
    const BoundedOutcome fifo = run_bounded(5, [&] { return error_of(dir / "fifo.toml"); });
    BOOST_TEST((fifo.status == BoundedOutcome::Status::Done), "reading a fifo record: " << fifo.problem);
    BOOST_TEST(fifo.output == "state record " + dir / "fifo.toml" + " is not a regular file");
    BOOST_TEST(error_of(dir / "link.toml").find("Too many levels of symbolic links") != std::string::npos);
    BOOST_TEST(error_of(dir / "huge.toml") == "state record " + dir / "huge.toml" + " is larger than 1048576 bytes");
    BOOST_TEST(error_of(dir / "bad.toml").find("cannot read state record " + dir / "bad.toml") == 0u);
    BOOST_TEST(read_record(real)["status"].value_or(std::string()) == "ready");
}

BOOST_AUTO_TEST_SUITE_END()
