#include <boost/test/unit_test.hpp>

#include <atomic>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "stager/copies/copy_lock.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;
using dlstage::test::TempDir;

namespace {
using test::content_of;

LockOptions quick(std::vector<std::string>* said, std::optional<bool> running)
{
    LockOptions o;
    o.poll_s = 0.05;
    o.heartbeat_s = 0.05;
    o.job_running = [running](const std::string&) { return running; };
    o.say = [said](const std::string& line) { said->push_back(line); };
    return o;
}

LockHolder holder(const std::string& job, const std::string& host = "n1")
{
    return LockHolder{job, host, static_cast<long>(getpid()), 0};
}
}  // namespace

BOOST_AUTO_TEST_SUITE(copy_lock)

BOOST_AUTO_TEST_CASE(a_lock_names_its_holder_and_goes_on_release)
{
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    std::vector<std::string> said;
    {
        CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("7"), quick(&said, true));
        const auto parsed = parse_lock(content_of(dir / ".lock-x"));
        BOOST_REQUIRE(parsed.has_value());
        BOOST_TEST(parsed->job == "7");
        BOOST_TEST(parsed->host == "n1");
        BOOST_TEST(parsed->pid == getpid());
        BOOST_TEST(parsed->since > 0);
    }
    BOOST_TEST(access((dir / ".lock-x").c_str(), F_OK) != 0);
    BOOST_TEST(!parse_lock("job 7\nhost n1\n").has_value());
    BOOST_TEST(!parse_lock("job 7\nhost n1\npid x\nsince 1\n").has_value());
}

BOOST_AUTO_TEST_CASE(a_second_job_waits_for_a_live_holder_and_gets_the_lock_after_it)
{
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    std::vector<std::string> said_first, said_second;
    auto first =
        std::make_unique<CopyLock>(fd.get(), ".lock-x", dir / ".lock-x", holder("7"), quick(&said_first, true));
    std::atomic<bool> got{false};
    std::thread second([&] {
        CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("8", "n2"), quick(&said_second, true));
        got = true;
    });
    usleep(300000);
    BOOST_TEST(!got.load());
    first.reset();  // released
    second.join();
    BOOST_TEST(got.load());
    BOOST_REQUIRE(!said_second.empty());
    BOOST_TEST(said_second.front().find("waiting: job 7 on n1") != std::string::npos, said_second.front());
}

BOOST_AUTO_TEST_CASE(a_lock_of_an_ended_job_or_a_silent_holder_is_broken)
{
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    dir.write(".lock-x", "job 5\nhost n9\npid 1\nsince 1\n");
    std::vector<std::string> said;
    {
        CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("8"), quick(&said, false));
        BOOST_TEST(parse_lock(content_of(dir / ".lock-x"))->job == "8");
    }
    BOOST_REQUIRE(!said.empty());
    BOOST_TEST(said.back().find("job 5 has ended") != std::string::npos, said.back());

    // Slurm says nothing, the holder has not beaten for 10 minutes.
    dir.write(".lock-x", "job 5\nhost n9\npid 1\nsince 1\n");
    const struct timespec old[2] = {{time(nullptr) - 600, 0}, {time(nullptr) - 600, 0}};
    utimensat(fd.get(), ".lock-x", old, 0);
    said.clear();
    {
        CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("8"), quick(&said, std::nullopt));
    }
    BOOST_TEST(said.back().find("silent for") != std::string::npos, said.back());
    BOOST_TEST(access((dir / ".lock-x").c_str(), F_OK) != 0);
}

// Planted by another user while the directory was open to them, naming a
// job of theirs that runs and a live pid: no job of this user holds it.
BOOST_AUTO_TEST_CASE(a_lock_someone_else_owns_is_broken_at_once)
{
    if (geteuid() != 0)
        return;  // chown needs root
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    dir.write(".lock-x", "job 5\nhost n1\npid 1\nsince 1\n");
    BOOST_REQUIRE(chown((dir / ".lock-x").c_str(), 12345, 12345) == 0);
    std::vector<std::string> said;
    {
        CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("8"), quick(&said, true));
        BOOST_TEST(parse_lock(content_of(dir / ".lock-x"))->job == "8");
    }
    BOOST_REQUIRE(!said.empty());
    BOOST_TEST(said.back().find("belongs to uid 12345") != std::string::npos, said.back());
}

// No job writes anything but a regular file as its lock: a fifo, a symlink
// or a directory under the lock's name (someone else's, planted while the
// directory was open to them) is moved out of the way, not a reason to fail
// every later job.
BOOST_AUTO_TEST_CASE(a_fifo_a_symlink_or_a_directory_in_the_locks_place_is_moved_away)
{
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    for (int kind = 0; kind < 3; ++kind) {
        const std::string lock = dir / ".lock-x";
        BOOST_REQUIRE((kind == 0   ? mkfifo(lock.c_str(), 0600)
                       : kind == 1 ? symlink("/etc/passwd", lock.c_str())
                                   : mkdir(lock.c_str(), 0700)) == 0);
        std::vector<std::string> said;
        {
            CopyLock taken(fd.get(), ".lock-x", lock, holder("8"), quick(&said, true));
            BOOST_TEST(parse_lock(content_of(lock))->job == "8");
        }
        BOOST_REQUIRE(!said.empty());
        BOOST_TEST(said.back().find("is not a lock") != std::string::npos, said.back());
        BOOST_TEST(access(lock.c_str(), F_OK) != 0);
    }
}

BOOST_AUTO_TEST_CASE(the_holder_beats_and_release_leaves_a_lock_that_is_no_longer_its_own)
{
    TempDir dir;
    const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    std::vector<std::string> said;
    CopyLock lock(fd.get(), ".lock-x", dir / ".lock-x", holder("7"), quick(&said, true));
    const struct timespec old[2] = {{1000, 0}, {1000, 0}};
    utimensat(fd.get(), ".lock-x", old, 0);
    usleep(200000);
    struct stat st {};
    stat((dir / ".lock-x").c_str(), &st);
    BOOST_TEST(st.st_mtim.tv_sec > 1000);                      // touched again by the heartbeat
    dir.write(".lock-x", "job 9\nhost n3\npid 1\nsince 1\n");  // another took it over
    lock.release();
    BOOST_TEST(parse_lock(content_of(dir / ".lock-x"))->job == "9");
}

BOOST_AUTO_TEST_SUITE_END()
