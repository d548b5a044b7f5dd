#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <grp.h>
#include <linux/fs.h>
#include <regex>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/support/deep_tree.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tests/unit/support/tmpdir.hpp"
#include "tier/safe_fs.hpp"

using namespace dlstage;
using namespace dlstage::test;
BOOST_AUTO_TEST_SUITE(safe_fs)

// ---------------------------------------------------------------- remove

BOOST_AUTO_TEST_CASE(removes_tree_but_never_what_symlinks_point_to)
{
    TierDir tier;
    const std::string outside = tier.tmp / "outside";
    make_dir(outside);
    make_file(outside + "/precious");
    make_file(tier.tmp / "precious-file");

    const std::string job = tier.root + "/42";
    make_dir(job);                                                   // 1
    make_file(job + "/file");                                        // 2
    make_dir(job + "/empty");                                        // 3
    make_dir(job + "/a");                                            // 4
    make_dir(job + "/a/b");                                          // 5
    make_dir(job + "/a/b/c");                                        // 6
    make_file(job + "/a/b/c/deep");                                  // 7
    make_link(outside, job + "/link-to-dir");                        // 8
    make_link(tier.tmp / "precious-file", job + "/a/link-to-file");  // 9
    make_link("/nonexistent", job + "/dangling");                    // 10
    make_file(job + "/with space");                                  // 11
    make_dir(job + "/new\nline");                                    // 12
    make_file(job + "/new\nline/\xff\xfe\x80 not utf-8");            // 13
    BOOST_REQUIRE(::mkfifo((job + "/fifo").c_str(), 0600) == 0);     // 14
    // A symlink to a directory, deep down where the walk descends.
    make_link(outside, job + "/a/b/c/outside");  // 15

    BOOST_TEST(outcome(remove_tree_within(tier.root, job)) == "removed=15");
    BOOST_TEST(!exists(job));
    BOOST_TEST(is_real_dir(tier.root));
    BOOST_TEST(exists(outside + "/precious"));
    BOOST_TEST(exists(tier.tmp / "precious-file"));

    BOOST_TEST(outcome(remove_tree_within(tier.root, job)) == "removed=0");  // idempotent
}

BOOST_AUTO_TEST_CASE(removes_nested_job_dir_only)
{
    TierDir tier;
    make_dir(tier.root + "/alice");
    make_dir(tier.root + "/alice/42");
    make_dir(tier.root + "/alice/43");
    make_file(tier.root + "/alice/42/x");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/alice/42")) == "removed=2");
    BOOST_TEST(is_real_dir(tier.root + "/alice/43"));
}

BOOST_AUTO_TEST_CASE(missing_dir_or_root_is_success)
{
    TierDir tier;
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/alice/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.tmp / "none", tier.tmp / "none/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.tmp / "none/tier", tier.tmp / "none/tier/42")) == "removed=0");
}

BOOST_AUTO_TEST_CASE(symlink_as_dir_or_on_the_way_removes_nothing)
{
    TierDir tier;
    const std::string outside = tier.tmp / "outside";
    make_dir(outside);
    make_dir(outside + "/42");
    make_file(outside + "/42/precious");

    const std::string job = tier.root + "/42";
    make_link(outside + "/42", job);
    BOOST_TEST(outcome(remove_tree_within(tier.root, job)) == "removed=0\n" + job + " is a symlink; nothing removed");
    BOOST_TEST(S_ISLNK(lstat_of(job).st_mode));

    make_link(outside, tier.root + "/alice");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/alice/42")) ==
               "removed=0\n" + tier.root + "/alice is a symlink; refusing to use it; nothing removed");
    BOOST_TEST(exists(outside + "/42/precious"));

    const std::string root_link = tier.tmp / "root-link";
    make_link(outside, root_link);
    BOOST_TEST(outcome(remove_tree_within(root_link, root_link + "/42")) ==
               "removed=0\ntier root " + root_link + " is a symlink; refusing to use it; nothing removed");
    BOOST_TEST(exists(outside + "/42/precious"));

    make_file(tier.root + "/43");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/43")) ==
               "removed=0\n" + tier.root + "/43 is not a directory; nothing removed");
    BOOST_TEST(exists(tier.root + "/43"));
}

BOOST_AUTO_TEST_CASE(deep_tree_is_removed_with_a_bounded_number_of_fds)
{
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job);
    const int levels = 2000;
    test::make_deep_tree(job, levels, "level-name");  // 2000 * 11 bytes: no full path would work
    // An fd limit far below the depth: holding one fd per level would fail.
    const std::string text = in_child([&] {
        const rlimit limit{100, 100};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        return outcome(remove_tree_within(tier.root, job));
    });
    BOOST_TEST(text == "removed=" + std::to_string(levels + 2));  // the levels, the file, job itself
    BOOST_TEST(!exists(job));
}

BOOST_AUTO_TEST_CASE(keeps_going_after_an_entry_that_cannot_be_removed)
{
    // An immutable file cannot be removed even by root.
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job);
    make_dir(job + "/a");
    make_dir(job + "/b");
    make_file(job + "/b/x");
    make_file(job + "/z");
    const std::string stuck = job + "/a/stuck\nname";
    make_file(stuck);
    const int fd = ::open(stuck.c_str(), O_RDONLY);
    BOOST_REQUIRE(fd >= 0);
    int flags = 0;
    const bool immutable = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
                           (flags |= FS_IMMUTABLE_FL, ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0);
    if (!immutable) {
        ::close(fd);
        BOOST_TEST_MESSAGE("skipped: cannot make a file immutable here (needs root and ext4/tmpfs)");
        return;
    }
    const RemoveResult result = remove_tree_within(tier.root, job);
    flags &= ~FS_IMMUTABLE_FL;
    ::ioctl(fd, FS_IOC_SETFLAGS, &flags);
    ::close(fd);

    // One problem, for the file only (not for its directories, which merely
    // cannot be empty), with the newline escaped to keep it one line.
    BOOST_TEST(outcome(result) == "removed=3\ncannot remove '" + job + "/a/stuck\\x0aname': Operation not permitted");
    BOOST_TEST(exists(stuck));
    BOOST_TEST(!exists(job + "/b"));
    BOOST_TEST(!exists(job + "/z"));
}

BOOST_AUTO_TEST_CASE(owner_removes_read_only_directories)
{
    // What the stager does, as the user, with partial data extracted
    // read-only from an archive.  As root: done as kOtherUid in a child.
    TierDir tier;
    const std::string job = tier.root + "/42";
    const std::string partial = job + "/.partial-data";
    make_dir(job, 0700);
    make_dir(partial);
    make_dir(partial + "/ro");
    make_file(partial + "/ro/f");
    make_dir(partial + "/ro/inner");
    make_file(partial + "/ro/inner/g");
    make_dir(partial + "/closed");
    make_file(partial + "/closed/h");
    // Levels above the job's directory that the user can pass but not read.
    BOOST_REQUIRE(::chmod(tier.root.c_str(), is_root() ? 0711 : 0311) == 0);
    if (is_root()) {
        BOOST_REQUIRE(::chmod(tier.tmp.path().c_str(), 0711) == 0);
        for (const char* p :
             {"", "/.partial-data", "/.partial-data/ro", "/.partial-data/ro/f", "/.partial-data/ro/inner",
              "/.partial-data/ro/inner/g", "/.partial-data/closed", "/.partial-data/closed/h"})
            BOOST_REQUIRE(::lchown((job + p).c_str(), kOtherUid, kOtherGid) == 0);
    }
    BOOST_REQUIRE(::chmod((partial + "/ro/inner").c_str(), 0500) == 0);
    BOOST_REQUIRE(::chmod((partial + "/ro").c_str(), 0500) == 0);
    BOOST_REQUIRE(::chmod((partial + "/closed").c_str(), 0) == 0);

    const std::string text = in_child([&] { return outcome(remove_tree_within(tier.root, partial)); },
                                      is_root() ? kOtherUid : kSameUid, kOtherGid);
    BOOST_TEST(text == "removed=7");
    BOOST_TEST(!exists(partial));
    BOOST_TEST(is_real_dir(job));
    ::chmod(tier.root.c_str(), 0755);  // for TempDir's cleanup
}

BOOST_AUTO_TEST_CASE(the_epilog_removes_as_the_jobs_user_and_leaves_what_others_own)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job, 0700);
    make_dir(job + "/mine", 0500);  // read-only: its owner may open it up
    make_file(job + "/mine/a");
    make_file(job + "/b");
    // Another user's data, moved into the job directory by its user (it was
    // in a sticky directory the job's user owned): root must not remove it.
    make_dir(job + "/team");
    make_dir(job + "/team/victim");
    make_file(job + "/team/victim/results.txt");
    for (const std::string& p : {job, job + "/mine", job + "/mine/a", job + "/b", job + "/team"})
        BOOST_REQUIRE(::lchown(p.c_str(), kOtherUid, kOtherGid) == 0);
    for (const std::string& p : {job + "/team/victim", job + "/team/victim/results.txt"})
        BOOST_REQUIRE(::lchown(p.c_str(), kOtherUid + 1, kOtherGid + 1) == 0);

    const RemoveResult result = remove_tree_within(tier.root, job, Owner{kOtherUid, kOtherGid});
    BOOST_TEST(outcome(result) == "removed=3\ncannot remove " + job + "/team/victim/results.txt: Permission denied");
    BOOST_TEST(exists(job + "/team/victim/results.txt"));
    BOOST_TEST(!exists(job + "/mine"));
    BOOST_TEST(!exists(job + "/b"));
    // Once it is the job's own again, the same call removes the rest, the
    // job directory too (as root, from the root-owned tier root).
    BOOST_REQUIRE(::lchown((job + "/team/victim").c_str(), kOtherUid, kOtherGid) == 0);
    BOOST_REQUIRE(::lchown((job + "/team/victim/results.txt").c_str(), kOtherUid, kOtherGid) == 0);
    BOOST_TEST(outcome(remove_tree_within(tier.root, job, Owner{kOtherUid, kOtherGid})) == "removed=4");
    BOOST_TEST(!exists(job));
}

BOOST_AUTO_TEST_CASE(a_shared_job_dir_is_removed_by_the_one_node_whose_claim_finds_it)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job, 0700);
    make_dir(job + "/d");
    make_file(job + "/d/a");
    for (const std::string& p : {job, job + "/d", job + "/d/a"})
        BOOST_REQUIRE(::lchown(p.c_str(), kOtherUid, kOtherGid) == 0);
    const Owner owner{kOtherUid, kOtherGid};
    // n1's epilog claims it and removes it; n2's and n3's find nothing.
    BOOST_TEST(outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n1")) == "removed=3");
    BOOST_TEST(outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n2")) == "removed=0");
    BOOST_TEST(!exists(job));
    BOOST_TEST(!exists(tier.root + "/42.removing-n1"));
    BOOST_TEST(!exists(tier.root + "/42.removing-n2"));
    // A symlink in the job directory's place is renamed, and removed as a link.
    make_dir(tier.tmp / "elsewhere");
    make_file(tier.tmp / "elsewhere/precious");
    BOOST_REQUIRE(::symlink((tier.tmp / "elsewhere").c_str(), job.c_str()) == 0);
    remove_tree_within_once(tier.root, job, owner, "42.removing-n3");
    BOOST_TEST(exists(tier.tmp / "elsewhere/precious"));
}

// An epilog stopped by its time limit (a big copy on a slow parallel file
// system) after its claim leaves JOB.removing-NODE; the next run of that
// node's epilog (the job requeued, the epilog run again) finishes it, and
// a job directory made again under the same id is still claimed.
BOOST_AUTO_TEST_CASE(a_claim_left_by_a_stopped_epilog_is_finished_by_the_next_run_on_that_node)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string job = tier.root + "/42";
    const std::string claim = tier.root + "/42.removing-n1";
    const auto users = [](const std::string& dir) {
        make_dir(dir, 0700);
        make_file(dir + "/a");
        for (const std::string& p : {dir, dir + "/a"})
            BOOST_REQUIRE(::lchown(p.c_str(), kOtherUid, kOtherGid) == 0);
    };
    const Owner owner{kOtherUid, kOtherGid};
    users(claim);  // claimed, then stopped
    BOOST_TEST(outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n2")) == "removed=0");
    BOOST_TEST(exists(claim));  // n1's to finish, not n2's
    BOOST_TEST(outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n1")) == "removed=2");
    BOOST_TEST(!exists(claim));
    // Requeued: the job directory again, and the old claim still there.
    users(claim);
    users(job);
    BOOST_TEST(outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n1")) == "removed=4");
    BOOST_TEST(!exists(claim));
    BOOST_TEST(!exists(job));
    // Under the claim's name, something not the job's user's: left alone.
    make_dir(claim, 0700);
    make_file(claim + "/b");
    users(job);
    const std::string text = outcome(remove_tree_within_once(tier.root, job, owner, "42.removing-n1"));
    BOOST_TEST(exists(claim + "/b"));
    BOOST_TEST(exists(job));
    BOOST_TEST(text.find("not the job's user's") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(mount_points_are_left_in_place)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job);
    make_dir(job + "/a");
    make_file(job + "/a/file");
    make_dir(job + "/mnt");
    make_dir(job + "/z");

    // In a child with its own mount namespace, so nothing leaks to the host.
    const std::string text = in_child([&] {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return std::string("skip: ") + std::strerror(errno);
        if (::mount("tmpfs", (job + "/mnt").c_str(), "tmpfs", 0, "size=1m") != 0)
            return std::string("skip: mount tmpfs: ") + std::strerror(errno);
        const int fd = ::open((job + "/mnt/inside").c_str(), O_WRONLY | O_CREAT, 0644);
        if (fd < 0)
            return std::string("cannot write inside the mount");
        ::close(fd);
        std::string out;
        // The mount point on the way, or as the tree: refused outright.
        out += outcome(remove_tree_within(tier.root, job + "/mnt/x")) + "\n";
        out += outcome(remove_tree_within(tier.root, job + "/mnt")) + "\n";
        // Inside the tree: left in place, the rest removed.
        out += outcome(remove_tree_within(tier.root, job)) + "\n";
        out += exists(job + "/mnt/inside") ? "inside kept" : "inside removed";
        return out;
    });
    if (skipped(text))
        return;
    const std::string other_fs = " is on another file system than the tier root (a mount point?); ";
    BOOST_TEST(text == "removed=0\n" + job + "/mnt is a mount point (tmpfs); refusing to use it; nothing removed\n" +
                           "removed=0\n" + job + "/mnt" + other_fs + "nothing removed\n" + "removed=3\n" + job +
                           "/mnt" + other_fs + "left in place\n" + "inside kept");
    BOOST_TEST(is_real_dir(job + "/mnt"));  // the directory under the mount, now unmounted
    BOOST_TEST(!exists(job + "/a"));
    BOOST_TEST(!exists(job + "/z"));
}

std::string mount_tmpfs(const std::string& where)
{
    return ::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=1m") == 0
               ? ""
               : "skip: mount tmpfs: " + std::string(std::strerror(errno));
}

std::string detached(const DetachResult& r)
{
    std::string text = "detached=" + std::to_string(r.detached);
    for (const std::string& problem : r.problems)
        text += "\n" + problem;
    return text + "\n";
}

bool mounted(const std::string& path)
{
    struct stat here {
    }, up{};
    return ::stat(path.c_str(), &here) == 0 && ::stat((path + "/..").c_str(), &up) == 0 && here.st_dev != up.st_dev;
}

BOOST_AUTO_TEST_CASE(detach_unmounts_what_is_below_but_never_through_a_symlink)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    TierDir tier;
    test::TempDir outside;
    const std::string job = tier.root + "/42";
    make_dir(job);
    make_dir(job + "/image");
    make_dir(job + "/plain");
    make_dir(outside / "target");
    make_link(outside / "target", job + "/link");

    const std::string text = in_mount_namespace([&] {
        for (const std::string& where : {job + "/image", outside / "target"})
            if (std::string skip = mount_tmpfs(where); !skip.empty())
                return skip;
        make_dir(job + "/image/inner");
        mount_tmpfs(job + "/image/inner");  // nested: goes with its outer mount
        mount_tmpfs(job + "/plain");
        mount_tmpfs(job + "/plain");  // stacked: two rounds
        std::string out;
        out += detached(detach_mounts_within(tier.root, job + "/link"));   // the symlink is not followed
        out += detached(detach_mounts_within(tier.root, job + "/gone"));   // nothing there
        out += detached(detach_mounts_within(tier.root, job + "/image"));  // it, and what is inside along
        out += detached(detach_mounts_within(tier.root, job + "/image"));  // again: harmless
        out += detached(detach_mounts_within(tier.root, "/etc/x"));        // outside the tier
        out += detached(detach_mounts_within(tier.root, job));             // the rest below the job dir
        out += mounted(outside / "target") ? "target still mounted\n" : "target unmounted\n";
        out += mounted(job + "/plain") || mounted(job + "/image") ? "job mounts left" : "job mounts gone";
        return out;
    });
    if (skipped(text))
        return;
    BOOST_TEST(text == "detached=0\ndetached=0\ndetached=1\ndetached=0\ndetached=0\ndirectory /etc/x is not below "
                       "tier root " +
                           tier.root + "; nothing unmounted\ndetached=2\ntarget still mounted\njob mounts gone");
}

BOOST_AUTO_TEST_CASE(a_mount_on_the_leaf_is_detached_and_moved_aside)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    TierDir tier;
    const std::string job = tier.root + "/42";
    make_dir(job, 0700);
    const std::string text = in_mount_namespace([&] {
        if (std::string skip = mount_tmpfs(job); !skip.empty())
            return skip;
        const std::string out = outcome(prepare_job_dir(tier.root, job, geteuid(), getegid()));
        return out + (mounted(job) ? "\nstill mounted" : "\nnot mounted");
    });
    if (skipped(text))
        return;
    BOOST_TEST(text == "Ready\n" + job + " is a mount point (tmpfs): detached the mount on it\n" + job +
                           " is a mount point (tmpfs); moved it aside to " + job + ".untrusted-X\nnot mounted");
}

BOOST_AUTO_TEST_SUITE_END()
