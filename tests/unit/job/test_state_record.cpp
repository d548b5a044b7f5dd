#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "job/job_layout.hpp"
#include "job/record_field.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/sys/bounded.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tests/unit/support/tmpdir.hpp"

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

BOOST_AUTO_TEST_CASE(records_are_parsed_from_text_and_files_alike)
{
    BOOST_TEST(parse_record("state = 'ready'\n", "r.toml")["state"].value_or(std::string()) == "ready");
    BOOST_TEST(test::error_of([] {
                   parse_record("state = [", "r.toml");
               }).rfind("cannot read state record r.toml: ", 0) == 0u);
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

// A state_dir with one job whose user dir holds records.
struct JobRecords {
    test::TempDir state;
    std::string user = job_user_dir(state.path(), "5");
    JobRecords()
    {
        for (const std::string& dir : {state / "jobs", state / "jobs/5", user})
            mkdir(dir.c_str(), 0755);
        write_record(user + "/failure-n1.toml", toml::table{{"node", "n1"}, {"message", "no room"}});
        write_record(user + "/progress-tree.toml", toml::table{{"dataset", "tree"}});
        write_record(user + "/" + prolog_outcome_name("n1"), toml::table{{"status", "failed"}});
        BOOST_REQUIRE(mkfifo((user + "/failure-n2.toml").c_str(), 0644) == 0);  // skipped, without blocking
    }
};

BOOST_AUTO_TEST_CASE(user_records_are_read_through_the_user_dir)
{
    JobRecords job;
    const auto failures = read_user_records(job.state.path(), "5", UserRecord::Failure);
    BOOST_REQUIRE(failures.size() == 1u);
    BOOST_TEST(failures[0].name == "failure-n1.toml");
    BOOST_TEST(failures[0].owner == geteuid());
    BOOST_TEST(failures[0].record["message"].value_or(std::string()) == "no room");
    BOOST_TEST(read_user_records(job.state.path(), "5", UserRecord::Progress).size() == 1u);
    BOOST_TEST(read_user_records(job.state.path(), "6", UserRecord::Progress).empty());
    // The prolog's outcome counts only if root wrote it.
    const auto outcome = read_prolog_outcome(job.state.path(), "5", "n1");
    BOOST_TEST(outcome.has_value() == (geteuid() == 0));
    if (geteuid() == 0) {
        BOOST_REQUIRE(chown((job.user + "/" + prolog_outcome_name("n1")).c_str(), 12345, 12345) == 0);
        BOOST_TEST(!read_prolog_outcome(job.state.path(), "5", "n1").has_value());
    }
}

BOOST_AUTO_TEST_CASE(a_mount_on_the_user_dir_is_never_entered)
{
    if (test::cannot_mount())
        return;
    JobRecords job;
    mkdir((job.state / "content").c_str(), 0755);
    job.state.write("content/failure-n9.toml", "node = 'n9'\nmessage = 'from the mount'\n");
    // The job's user mounts a FUSE file system on their user dir and
    // stops its server: reading it would block root's dlstage status.
    const std::string text = test::with_stopped_fuse(job.state / "content", job.state / "image.sqfs", job.user, [&] {
        const BoundedOutcome read = run_bounded(10, [&] {
            return std::to_string(read_user_records(job.state.path(), "5", UserRecord::Failure).size());
        });
        return read.status == BoundedOutcome::Status::Done ? "read " + read.output : "blocked: " + read.problem;
    });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "read 0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(unprepared_dirs)

const std::string kMissing = "cannot open /dev/shm/dlstage/3: No such file or directory";

BOOST_AUTO_TEST_CASE(a_first_run_is_told_what_to_check)
{
    for (const char* restarts : {"", "0", "x1"}) {
        BOOST_TEST(unprepared_dir("the job directory", "/dev/shm/dlstage/3", kMissing, restarts,
                                  "is PrologFlags=Alloc set and the plugin loaded?") ==
                   "the job directory /dev/shm/dlstage/3 was not prepared by the prolog: " + kMissing +
                       " (if slurmd restarted on this node as the job started, resubmit; if every job hits this, "
                       "is PrologFlags=Alloc set and the plugin loaded?)");
    }
}

BOOST_AUTO_TEST_CASE(a_run_after_a_requeue_is_told_slurms_part_and_what_to_do)
{
    for (const char* restarts : {"1", "12"}) {
        const std::string message = unprepared_dir("the node cache directory", "/dev/shm/dlstage/.cache/alice",
                                                   kMissing, restarts, "is the plugin loaded on this node?");
        BOOST_TEST(message.rfind("the node cache directory /dev/shm/dlstage/.cache/alice was not prepared by the "
                                 "prolog: " +
                                     kMissing + " (this run follows a requeue: Slurm before 23.11 skips",
                                 0) == 0);
        BOOST_TEST(message.find("requeue the job again)") == message.size() - 22);
        BOOST_TEST(message.find("plugin loaded") == std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
