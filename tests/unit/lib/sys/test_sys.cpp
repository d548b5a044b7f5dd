#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <stdexcept>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "lib/sys/bounded.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/group_list.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/quick_stat.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(mount_table)

BOOST_AUTO_TEST_CASE(parses_points_and_types_and_decodes_escapes)
{
    const std::string text =
        "22 1 0:21 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw\n"
        "40 22 0:45 / /dev/shm/dlstage/42/my\\040mount rw,nosuid - fuse.squashfuse squashfuse rw,user_id=1000\n"
        "41 40 0:46 / /dev/shm/dlstage/42/my\\040mount/in\\012ner rw - fuse fuse rw\n"
        "garbage line\n"
        "42 22 0:47 / relative rw - tmpfs tmpfs rw\n"
        "43 22 0:48 / /dev/shm/dlstage/420 rw master:1 - tmpfs tmpfs rw\n";
    const MountTable table(parse_mountinfo(text));
    BOOST_REQUIRE(table.entries().size() == 4u);
    BOOST_TEST(table.entries()[1].point == "/dev/shm/dlstage/42/my mount");
    BOOST_TEST(table.entries()[1].fstype == "fuse.squashfuse");
    BOOST_TEST(table.entries()[1].is_fuse());
    BOOST_TEST(table.entries()[2].point == "/dev/shm/dlstage/42/my mount/in\nner");
    BOOST_TEST(table.entries()[2].is_fuse());
    BOOST_TEST(!table.entries()[0].is_fuse());
    BOOST_TEST(table.at("/dev/shm")->id == 22);
    BOOST_TEST(!table.at("/dev/shm/dlstage").has_value());
    // Deepest first; 420 is not below 42.
    const auto points = table.points_within("/dev/shm/dlstage/42");
    BOOST_REQUIRE(points.size() == 2u);
    BOOST_TEST(points[0] == "/dev/shm/dlstage/42/my mount/in\nner");
    BOOST_TEST(points[1] == "/dev/shm/dlstage/42/my mount");
    BOOST_TEST(table.points_within("/").size() == 4u);
}

BOOST_AUTO_TEST_CASE(the_stack_top_is_the_last_mounted)
{
    const MountTable table(parse_mountinfo("1 0 0:1 / /a rw - tmpfs t rw\n2 1 0:2 / /a rw - fuse f rw\n"));
    BOOST_TEST(table.at("/a")->id == 2);
}

BOOST_AUTO_TEST_CASE(this_process_has_a_root_mount)
{
    BOOST_TEST(MountTable::current().at("/").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bounded)

BOOST_AUTO_TEST_CASE(returns_what_the_work_returned)
{
    const BoundedOutcome outcome = run_bounded(10, [] { return std::string(100000, 'x') + "end"; });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Done));
    BOOST_TEST(outcome.output.size() == 100003u);
    BOOST_TEST(outcome.output.substr(100000) == "end");
}

BOOST_AUTO_TEST_CASE(an_exception_or_a_crash_is_a_failure_with_its_reason)
{
    BoundedOutcome outcome = run_bounded(10, []() -> std::string { throw std::runtime_error("no room"); });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Failed));
    BOOST_TEST(outcome.problem == "no room");
    outcome = run_bounded(10, []() -> std::string {
        std::signal(SIGABRT, SIG_DFL);
        std::abort();
    });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Failed));
    BOOST_TEST(outcome.problem == "killed by signal 6 (Aborted)");
}

BOOST_AUTO_TEST_CASE(work_that_blocks_is_stopped_at_the_limit)
{
    // Opening a fifo nobody writes to blocks, as a stat into a stopped FUSE
    // server does.
    test::TempDir dir;
    const std::string fifo = dir / "fifo";
    BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const auto start = std::chrono::steady_clock::now();
    const BoundedOutcome outcome = run_bounded(1, [&] {
        ::open(fifo.c_str(), O_RDONLY);
        return std::string("opened");
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST((outcome.status == BoundedOutcome::Status::TimedOut));
    BOOST_TEST(outcome.problem == "did not finish within 1 s");
    // Within its bound, reaping the killed child included: a caller
    // holding a lock keeps its own deadline.
    BOOST_TEST(seconds >= 0.7);
    BOOST_TEST(seconds < 1.1);
}

BOOST_AUTO_TEST_CASE(the_parts_sent_before_the_limit_arrive_whole)
{
    test::TempDir dir;
    const std::string fifo = dir / "fifo";
    BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    BoundedOutcome outcome = run_bounded_parts(1, [&](const SendPart& send) {
        send("first");
        send(std::string(100000, 'x'));
        send("");
        send("a:P9:b");
        ::open(fifo.c_str(), O_RDONLY);  // blocks until killed
        send("never");
        return std::string("never");
    });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::TimedOut));
    BOOST_REQUIRE(outcome.parts.size() == 4u);
    BOOST_TEST(outcome.parts[0] == "first");
    BOOST_TEST(outcome.parts[1].size() == 100000u);
    BOOST_TEST(outcome.parts[2] == "");
    BOOST_TEST(outcome.parts[3] == "a:P9:b");
    BOOST_TEST(outcome.output.empty());
    // Done: the parts and the result.
    outcome = run_bounded_parts(10, [](const SendPart& send) {
        send("one");
        return std::string("Pend");
    });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Done));
    BOOST_TEST(outcome.parts == std::vector<std::string>{"one"}, boost::test_tools::per_element());
    BOOST_TEST(outcome.output == "Pend");
    // Failed: the parts sent before the failure still count.
    outcome = run_bounded_parts(10, [](const SendPart& send) -> std::string {
        send("done");
        throw std::runtime_error("no room");
    });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Failed));
    BOOST_TEST(outcome.problem == "no room");
    BOOST_TEST(outcome.parts == std::vector<std::string>{"done"}, boost::test_tools::per_element());
}

// A child stuck where SIGKILL cannot reach it (a FUSE request its server
// never answers) keeps whatever it holds: so it must hold nothing of its
// parent's, neither a lock (the node cache's) nor a pipe (an outer bounded
// child's result pipe, or slurmd's stdout).
BOOST_AUTO_TEST_CASE(the_child_holds_no_descriptor_of_its_parents)
{
    test::TempDir dir;
    const std::string locked = dir / "lock";
    const Fd lock(::open(locked.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    BOOST_REQUIRE(lock.valid());
    BOOST_REQUIRE(::flock(lock.get(), LOCK_EX) == 0);
    int pipe_fds[2];
    BOOST_REQUIRE(::pipe(pipe_fds) == 0);  // without O_CLOEXEC, as a caller's may be
    const Fd pipe_in(pipe_fds[0]), pipe_out(pipe_fds[1]);
    const BoundedOutcome outcome = run_bounded(10, [] {
        // Every descriptor open in the child and what it is, but the
        // listing's own.
        std::string open;
        DIR* fds = ::opendir("/proc/self/fd");
        while (const dirent* e = fds ? ::readdir(fds) : nullptr) {
            if (e->d_name[0] == '.' || std::atoi(e->d_name) == ::dirfd(fds))
                continue;
            char target[256] = {};
            const std::string link = std::string("/proc/self/fd/") + e->d_name;
            if (::readlink(link.c_str(), target, sizeof target - 1) < 0)
                continue;
            open +=
                std::string(e->d_name) + " " + (std::string(target).rfind("pipe:", 0) == 0 ? "pipe" : target) + "\n";
        }
        if (fds)
            ::closedir(fds);
        return open;
    });
    BOOST_TEST((outcome.status == BoundedOutcome::Status::Done));
    // 0-2 on /dev/null, and one pipe: the result's.
    BOOST_TEST(outcome.output.substr(0, 36) == "0 /dev/null\n1 /dev/null\n2 /dev/null\n");
    BOOST_TEST(std::count(outcome.output.begin(), outcome.output.end(), '\n') == 4, outcome.output);
    BOOST_TEST(outcome.output.find(" pipe\n") != std::string::npos, outcome.output);
    BOOST_TEST(outcome.output.find(locked) == std::string::npos, outcome.output);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(process)

BOOST_AUTO_TEST_CASE(an_exit_reads_the_same_everywhere)
{
    BOOST_TEST(describe_exit(3 << 8) == "exited with status 3");
    BOOST_TEST(describe_exit(SIGKILL) == "killed by signal 9 (Killed)");
    BOOST_TEST(shell_exit_code(3 << 8) == 3);
    BOOST_TEST(shell_exit_code(SIGTERM) == 128 + SIGTERM);
}

BOOST_AUTO_TEST_CASE(a_failure_reads_the_same_everywhere)
{
    BOOST_TEST(exited_ok(0));
    BOOST_TEST(!exited_ok(3 << 8));
    BOOST_TEST(!exited_ok(SIGKILL));
    BOOST_TEST(describe_failure("unsquashfs", 1 << 8, "Parallel unsquashfs\nFATAL ERROR: bad\tsuperblock\n\n") ==
               "unsquashfs exited with status 1: FATAL ERROR: bad superblock");
    BOOST_TEST(describe_failure("srun", SIGKILL, " \n") == "srun killed by signal 9 (Killed)");
    BOOST_TEST(first_line("\n  fuse: device not found\r\nmore\n") == "fuse: device not found");
    BOOST_TEST(last_line("one\ntwo") == "two");
    BOOST_TEST(first_line("") == "");
    BOOST_TEST(last_line("\n\n") == "");
}

BOOST_AUTO_TEST_CASE(a_program_is_found_where_exec_would_find_it)
{
    const char* saved = std::getenv("PATH");
    const std::string path = saved ? saved : "";
    test::TempDir dir;
    const std::string tool = dir.path() + "/dlstage-test-tool";
    Fd(::open(tool.c_str(), O_WRONLY | O_CREAT, 0755)).reset();
    ::setenv("PATH", ("/nonexistent:" + dir.path()).c_str(), 1);
    BOOST_TEST(find_on_path("dlstage-test-tool") == tool);
    BOOST_TEST(find_on_path("dlstage-no-such-program") == "");
    BOOST_TEST(find_on_path(tool) == tool);
    ::chmod(tool.c_str(), 0644);
    BOOST_TEST(find_on_path("dlstage-test-tool") == "");
    ::setenv("PATH", path.c_str(), 1);
}

BOOST_AUTO_TEST_CASE(a_running_program_is_waited_for_without_blocking_and_stopped)
{
    const pid_t quick = spawn({"/bin/sh", "-c", "exit 5"});
    const auto status = wait_within(quick, std::chrono::seconds(5));
    BOOST_TEST(status.has_value());
    BOOST_TEST(describe_exit(status.value_or(0)) == "exited with status 5");

    const pid_t slow = spawn({"/bin/sh", "-c", "sleep 30"});
    BOOST_TEST(!try_wait(slow).has_value());
    BOOST_TEST(describe_exit(stop(slow, SIGTERM, std::chrono::seconds(5))) == "killed by signal 15 (Terminated)");

    // One that ignores the signal is killed after the grace.
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    Fd ready_read(ready[0]), ready_write(ready[1]);
    const pid_t stubborn = spawn({"/bin/sh", "-c", "trap '' TERM; echo; while :; do sleep 0.05; done"},
                                 SpawnIo{-1, ready_write.get(), -1, false});
    ready_write.reset();
    char byte = 0;
    BOOST_TEST(::read(ready_read.get(), &byte, 1) == 1);
    const auto started = std::chrono::steady_clock::now();
    BOOST_TEST(describe_exit(stop(stubborn, SIGTERM, std::chrono::milliseconds(200))) == "killed by signal 9 (Killed)");
    BOOST_TEST((std::chrono::steady_clock::now() - started < std::chrono::seconds(5)));
    BOOST_TEST(try_wait(stubborn).value_or(-1) == 0);  // reaped: nothing left to wait for
}

BOOST_AUTO_TEST_CASE(a_watched_process_is_seen_to_end_and_one_not_running_has_ended)
{
    const pid_t pid = spawn({"/bin/sh", "-c", "sleep 0.3"});
    const ProcessWatch watch(pid);
    BOOST_TEST(watch.by_pidfd());
    BOOST_TEST(!watch.ended_within(std::chrono::milliseconds(0)));
    BOOST_TEST(watch.ended_within(std::chrono::seconds(10)));
    BOOST_TEST(describe_exit(wait_for(pid, "sh")) == "exited with status 0");
    BOOST_TEST(ProcessWatch(pid).ended_within(std::chrono::milliseconds(0)));  // reaped: no such process
    // Without a pidfd: by its start time in /proc; a zombie has ended too.
    const pid_t other = spawn({"/bin/sh", "-c", "sleep 0.3"});
    const ProcessWatch by_proc(other, false);
    BOOST_TEST(!by_proc.by_pidfd());
    BOOST_TEST(!by_proc.ended_within(std::chrono::milliseconds(0)));
    BOOST_TEST(by_proc.ended_within(std::chrono::seconds(10)));  // a zombie until reaped below
    BOOST_TEST(describe_exit(wait_for(other, "sh")) == "exited with status 0");
    BOOST_TEST(ProcessWatch(other, false).ended_within(std::chrono::milliseconds(0)));
    BOOST_TEST(!ProcessWatch(::getppid(), false).ended_within(std::chrono::milliseconds(0)));
}

BOOST_AUTO_TEST_CASE(a_process_goes_on_detached_its_starter_reaping_only_the_parent)
{
    // The shell's child detaches: its parent exits at once, the child lives on.
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    Fd ready_read(ready[0]), ready_write(ready[1]);
    const pid_t parent = ::fork();
    BOOST_REQUIRE(parent >= 0);
    if (parent == 0) {
        ready_read.reset();
        continue_detached();
        ::usleep(200000);
        const char byte = 'x';
        (void)!::write(ready_write.get(), &byte, 1);
        _exit(0);
    }
    ready_write.reset();
    const auto status = wait_within(parent, std::chrono::seconds(5));
    BOOST_TEST(status.has_value());  // exited before its work was done
    char byte = 0;
    BOOST_TEST(::read(ready_read.get(), &byte, 1) == 1);  // the detached child did it
    BOOST_TEST(byte == 'x');
}

BOOST_AUTO_TEST_CASE(a_program_that_cannot_run_is_reported_to_the_caller)
{
    BOOST_TEST(test::error_of([] { spawn({"/nonexistent/dlstage-test"}); }) ==
               "cannot run /nonexistent/dlstage-test: No such file or directory");
    BOOST_TEST(test::error_of([] { spawn({"dlstage-no-such-program"}); }) ==
               "cannot run dlstage-no-such-program: No such file or directory");
}

BOOST_AUTO_TEST_CASE(stderr_lines_come_one_by_one_and_the_status_at_the_end)
{
    std::vector<std::string> lines;
    const int status = run_reading_stderr(
        {"sh", "-c", "echo out; echo one >&2; printf two >&2; exit 4"},
        [&](const std::string& line) { lines.push_back(line); }, StderrRunOptions{true, {}});
    BOOST_TEST(describe_exit(status) == "exited with status 4");
    BOOST_TEST((lines == std::vector<std::string>{"one", "two"}));
}

BOOST_AUTO_TEST_CASE(the_program_gets_exactly_the_environment_given)
{
    const std::vector<std::string> env = {"ONLY=this"};
    const pid_t pid = spawn({"/bin/sh", "-c", "test \"$ONLY\" = this && test -z \"$HOME\""}, SpawnIo{}, &env);
    BOOST_TEST(describe_exit(wait_for(pid, "sh")) == "exited with status 0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(fds)

BOOST_AUTO_TEST_CASE(a_dir_stream_lists_entries_and_leaves_the_callers_fd_alone)
{
    test::TempDir dir;
    dir.write("b", "");
    dir.write("a", "");
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::vector<std::string> names;
    for (int pass = 0; pass < 2; ++pass) {  // a second stream over the same fd starts from the top
        DirStream entries(fd.get());
        BOOST_REQUIRE(entries.valid());
        names.clear();
        while (const dirent* e = entries.next())
            names.emplace_back(e->d_name);
        BOOST_TEST(entries.error() == 0);
        std::sort(names.begin(), names.end());
        BOOST_TEST(names == std::vector<std::string>({"a", "b"}));
    }
    BOOST_TEST(fcntl(fd.get(), F_GETFD) != -1);
    BOOST_TEST(!DirStream(-1).valid());
}

BOOST_AUTO_TEST_CASE(close_reports_once_and_leaves_nothing_to_close)
{
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int raw = fd.get();
    BOOST_TEST(fd.close() == 0);
    BOOST_TEST(!fd.valid());
    BOOST_TEST(fcntl(raw, F_GETFD) == -1);
    BOOST_TEST(fd.close() == 0);  // nothing left: no second close of a reused number
}

BOOST_AUTO_TEST_CASE(a_name_exists_as_itself_a_dangling_symlink_too)
{
    test::TempDir dir;
    dir.write("file", "");
    BOOST_REQUIRE(::symlink("nowhere", (dir / "dangling").c_str()) == 0);
    BOOST_TEST(name_exists(dir / "file"));
    BOOST_TEST(name_exists(dir / "dangling"));
    BOOST_TEST(!name_exists(dir / "missing"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(parallel)

BOOST_AUTO_TEST_CASE(every_index_once_on_several_threads)
{
    std::vector<std::atomic<int>> seen(1000);
    for_each_index(seen.size(), 4, [&](std::size_t i) { ++seen[i]; });
    BOOST_TEST(std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& n) { return n == 1; }));
    for_each_index(0, 4, [](std::size_t) { BOOST_FAIL("no index to hand out"); });
}

BOOST_AUTO_TEST_CASE(the_first_error_stops_the_rest_and_comes_back)
{
    std::atomic<std::size_t> done{0};
    const std::string error = test::error_of([&] {
        for_each_index(100000, 2, [&](std::size_t i) {
            if (i == 10)
                throw Error("entry 10 is broken");
            ++done;
        });
    });
    BOOST_TEST(error == "entry 10 is broken");
    BOOST_TEST(done < 100000u - 1);  // stopped handing out indexes
}

BOOST_AUTO_TEST_CASE(the_shares_in_blocks_cover_every_index_once_each_its_own)
{
    // Boost.Test is not thread-safe: the threads count, the test checks after.
    for (const std::size_t total : {std::size_t(0), std::size_t(3), std::size_t(5000)}) {
        std::vector<std::atomic<int>> seen(total);
        std::atomic<int> strays{0};
        for (int rank = 0; rank < 3; ++rank)
            for_share_in_blocks(total, rank, 3, 4, [&](std::size_t from, std::size_t to, std::size_t step) {
                for (std::size_t i = from; i < to; i += step) {
                    if (step != 3 || i % 3 != static_cast<std::size_t>(rank))
                        ++strays;
                    ++seen[i];
                }
            });
        BOOST_TEST(strays == 0);
        BOOST_TEST(std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& n) { return n == 1; }));
    }
}

BOOST_AUTO_TEST_CASE(a_pool_hands_out_every_index_once_round_after_round_on_its_threads)
{
    ThreadPool pool(4);
    std::mutex mutex;
    std::set<std::thread::id> threads;
    for (int round = 0; round < 2000; ++round) {
        std::vector<std::atomic<int>> seen(8);
        pool.for_each_index(seen.size(), [&](std::size_t i) {
            ++seen[i];
            if (round % 100 == 0) {  // long enough that the helpers get some
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                const std::lock_guard<std::mutex> lock(mutex);
                threads.insert(std::this_thread::get_id());
            }
        });
        BOOST_TEST_REQUIRE(std::all_of(seen.begin(), seen.end(), [](const std::atomic<int>& n) { return n == 1; }));
    }
    BOOST_TEST(threads.size() > 1u);
    pool.for_each_index(0, [](std::size_t) { BOOST_FAIL("no index to hand out"); });
}

BOOST_AUTO_TEST_CASE(a_pool_rethrows_the_first_error_and_serves_the_next_round)
{
    ThreadPool pool(3);
    const std::string error = test::error_of([&] {
        pool.for_each_index(1000, [&](std::size_t i) {
            if (i == 10)
                throw Error("entry 10 is broken");
        });
    });
    BOOST_TEST(error == "entry 10 is broken");
    std::atomic<int> done{0};
    pool.for_each_index(100, [&](std::size_t) { ++done; });
    BOOST_TEST(done == 100);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(group_list_of_a_user)

BOOST_AUTO_TEST_CASE(the_primary_group_and_the_supplementary_ones)
{
    const std::vector<gid_t> root = group_list("root", 0);
    BOOST_TEST((std::find(root.begin(), root.end(), 0u) != root.end()));
    // A user the database does not know has only the group given.
    BOOST_TEST((group_list("nobody-here-xyz", 12345) == std::vector<gid_t>{12345}));
}

BOOST_AUTO_TEST_SUITE_END()
