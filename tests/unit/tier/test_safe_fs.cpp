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

#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tests/unit/support/tmpdir.hpp"
#include "tier/safe_fs.hpp"
#include "tier/tier_walk.hpp"

using namespace dlstage;
using namespace dlstage::test;

BOOST_AUTO_TEST_SUITE(safe_fs)

// ---------------------------------------------------------------- prepare

BOOST_AUTO_TEST_CASE(creates_nested_leaf_with_exact_modes_and_owner)
{
    TierDir tier;
    const std::string dir = tier.root + "/alice/42";
    PrepareResult result;
    {
        Umask strict(077);
        result = prepare_job_dir(tier.root, dir, geteuid(), getegid());
    }
    BOOST_TEST(outcome(result) == "Ready");
    BOOST_TEST(result.dir.valid());
    BOOST_TEST(is_real_dir(tier.root + "/alice"));
    BOOST_TEST(mode_of(tier.root + "/alice") == 0755u);
    BOOST_TEST(lstat_of(tier.root + "/alice").st_uid == geteuid());
    BOOST_TEST(is_real_dir(dir));
    BOOST_TEST(mode_of(dir) == 0700u);
    BOOST_TEST(lstat_of(dir).st_uid == geteuid());
    BOOST_TEST(lstat_of(dir).st_gid == getegid());
    BOOST_TEST(entries_in(dir) == 0);
    BOOST_TEST(mode_of(tier.root) == 0755u);  // the existing root is left alone
    struct stat by_fd {};
    BOOST_TEST(::fstat(result.dir.get(), &by_fd) == 0);
    BOOST_TEST(by_fd.st_ino == lstat_of(dir).st_ino);  // the fd is the directory made
}

BOOST_AUTO_TEST_CASE(reuses_leaf_of_the_same_owner_and_resets_its_mode)
{
    TierDir tier;
    const std::string dir = tier.root + "/42";
    make_dir(dir, 0755);
    ::chmod(dir.c_str(), 0775);
    make_file(dir + "/kept");
    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, geteuid(), getegid())) == "Ready");
    BOOST_TEST(mode_of(dir) == 0700u);
    BOOST_TEST(exists(dir + "/kept"));  // a requeued job keeps what it staged
}

BOOST_AUTO_TEST_CASE(moves_a_symlinked_leaf_aside_and_leaves_its_target_alone)
{
    TierDir tier;
    const std::string outside = tier.tmp / "outside";
    make_dir(outside, 0755);
    make_file(outside + "/file");
    make_dir(tier.root + "/alice");
    const std::string dir = tier.root + "/alice/42";
    make_link(outside, dir);
    const struct stat before = lstat_of(outside);

    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, geteuid(), getegid())) ==
               "Ready\n" + dir + " is a symlink; moved it aside to " + dir + ".untrusted-X");
    const struct stat after = lstat_of(outside);
    BOOST_TEST(after.st_mode == before.st_mode);
    BOOST_TEST(after.st_uid == before.st_uid);
    BOOST_TEST(after.st_gid == before.st_gid);
    BOOST_TEST(is_real_dir(dir));
    BOOST_TEST(entries_in(dir) == 0);
    BOOST_TEST(entries_in(tier.root + "/alice") == 2);  // the job dir and the link, renamed
    BOOST_TEST(entries_in(outside) == 1);
}

BOOST_AUTO_TEST_CASE(moves_a_symlink_or_file_in_an_intermediate_component_aside)
{
    TierDir tier;
    const std::string outside = tier.tmp / "outside";
    make_dir(outside);
    make_link(outside, tier.root + "/alice");
    BOOST_TEST(outcome(prepare_job_dir(tier.root, tier.root + "/alice/42", geteuid(), getegid())) ==
               "Ready\n" + tier.root + "/alice is a symlink; moved it aside to " + tier.root + "/alice.untrusted-X");
    BOOST_TEST(entries_in(outside) == 0);
    BOOST_TEST(is_real_dir(tier.root + "/alice/42"));

    make_file(tier.root + "/bob");
    BOOST_TEST(outcome(prepare_job_dir(tier.root, tier.root + "/bob/42", geteuid(), getegid())) ==
               "Ready\n" + tier.root + "/bob is not a directory; moved it aside to " + tier.root + "/bob.untrusted-X");
    BOOST_TEST(is_real_dir(tier.root + "/bob/42"));
}

BOOST_AUTO_TEST_CASE(moves_a_leaf_that_is_a_file_aside)
{
    TierDir tier;
    make_file(tier.root + "/42");
    BOOST_TEST(outcome(prepare_job_dir(tier.root, tier.root + "/42", geteuid(), getegid())) ==
               "Ready\n" + tier.root + "/42 is not a directory; moved it aside to " + tier.root + "/42.untrusted-X");
    BOOST_TEST(is_real_dir(tier.root + "/42"));
}

BOOST_AUTO_TEST_CASE(creates_missing_root_when_its_parent_exists)
{
    test::TempDir tmp;
    const std::string root = tmp / "tier";
    PrepareResult result;
    {
        Umask strict(077);
        result = prepare_job_dir(root, root + "/42", geteuid(), getegid());
    }
    BOOST_TEST(outcome(result) == "Ready");
    BOOST_TEST(is_real_dir(root));
    BOOST_TEST(mode_of(root) == 0755u);
    BOOST_TEST(lstat_of(root).st_uid == geteuid());
    BOOST_TEST(mode_of(root + "/42") == 0700u);
}

BOOST_AUTO_TEST_CASE(root_and_its_parent_missing_is_a_failure_above_the_tier)
{
    test::TempDir tmp;
    const std::string root = tmp / "gone/tier";
    const PrepareResult result = prepare_job_dir(root, root + "/42", geteuid(), getegid());
    BOOST_TEST(outcome(result) == "Failed: tier root " + root + " is missing and so is its parent " + tmp / "gone");
    BOOST_TEST(result.at_tier_parent);
    BOOST_TEST(result.err == ENOENT);
    BOOST_TEST(!exists(tmp / "gone"));
}

BOOST_AUTO_TEST_CASE(a_squatted_root_is_moved_aside_and_replaced)
{
    test::TempDir tmp;
    const std::string root = tmp / "tier";
    // A symlink to somewhere else: followed never, moved aside.
    const std::string real = tmp / "real";
    make_dir(real);
    make_link(real, root);
    BOOST_TEST(outcome(prepare_job_dir(root, root + "/42", geteuid(), getegid())) ==
               "Ready\ntier root " + root + " is a symlink; moved it aside to " + root + ".untrusted-X");
    BOOST_TEST(entries_in(real) == 0);
    BOOST_TEST(is_real_dir(root + "/42"));

    // A file.
    const std::string file = tmp / "file";
    make_file(file);
    BOOST_TEST(outcome(prepare_job_dir(file, file + "/42", geteuid(), getegid())) ==
               "Ready\ntier root " + file + " is not a directory; moved it aside to " + file + ".untrusted-X");

    // A directory others may write to (what a squatter leaves: 0777).
    const std::string open_root = tmp / "open";
    make_dir(open_root);
    ::chmod(open_root.c_str(), 0777);
    make_dir(open_root + "/42");  // planted in advance
    BOOST_TEST(outcome(prepare_job_dir(open_root, open_root + "/42", geteuid(), getegid())) ==
               "Ready\ntier root " + open_root + " is writable by group or others (mode 0777); moved it aside to " +
                   open_root + ".untrusted-X");
    BOOST_TEST(mode_of(open_root) == 0755u);
    BOOST_TEST(entries_in(open_root + "/42") == 0);
    BOOST_TEST(entries_in(tmp.path()) == 7);  // tier, real, file, open and what was moved aside of them
}

BOOST_AUTO_TEST_CASE(refuse_mode_names_what_is_untrusted_and_changes_nothing)
{
    test::TempDir tmp;
    const std::string root = tmp / "state";
    make_dir(root);
    ::chmod(root.c_str(), 0775);
    BOOST_TEST(outcome(prepare_job_dir(root, root + "/jobs/1/user", geteuid(), getegid(), Untrusted::Refuse)) ==
               "Failed: tier root " + root + " is writable by group or others (mode 0775); refusing to use it");
    BOOST_TEST(entries_in(root) == 0);
    BOOST_TEST(mode_of(root) == 0775u);
    const OpenResult opened = open_trusted_dir(root, root + "/jobs/1", true);
    BOOST_TEST(opened.problem ==
               "tier root " + root + " is writable by group or others (mode 0775); refusing to use it");
    ::chmod(root.c_str(), 0755);
    BOOST_TEST(open_trusted_dir(root, root + "/jobs/1", true).problem == "");
    BOOST_TEST(mode_of(root + "/jobs/1") == 0755u);
    // The leaf is still replaced: a job id used again finds the old job's.
    make_file(root + "/jobs/1/user");
    BOOST_TEST(outcome(prepare_job_dir(root, root + "/jobs/1/user", geteuid(), getegid(), Untrusted::Refuse)) ==
               "Ready\n" + root + "/jobs/1/user is not a directory; moved it aside to " + root +
                   "/jobs/1/user.untrusted-X");
}

BOOST_AUTO_TEST_CASE(refuses_paths_not_strictly_below_the_root)
{
    TierDir tier;
    const std::string& r = tier.root;
    const std::string rule = " must be an absolute path without empty, '.' or '..' components";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {r, "directory " + r + " is not below tier root " + r},
        {tier.tmp / "other/42", "directory " + tier.tmp / "other/42" + " is not below tier root " + r},
        {r + "2/42", "directory " + r + "2/42 is not below tier root " + r},
        {r + "/../42", "directory " + r + "/../42" + rule},
        {r + "/alice/../42", "directory " + r + "/alice/../42" + rule},
        {r + "/./42", "directory " + r + "/./42" + rule},
        {r + "//42", "directory " + r + "//42" + rule},
        {r + "/42/", "directory " + r + "/42/" + rule},
        {"tier/42", "directory tier/42" + rule},
        {"", "directory " + rule},
    };
    for (const auto& [dir, message] : cases) {
        BOOST_TEST(outcome(prepare_job_dir(r, dir, geteuid(), getegid())) == "Failed: " + message);
        const RemoveResult removed = remove_tree_within(r, dir);
        BOOST_TEST(outcome(removed) == "removed=0\n" + message + "; nothing removed");
    }
    BOOST_TEST(outcome(prepare_job_dir("tier", "tier/42", geteuid(), getegid())) ==
               "Failed: tier root tier" + rule + " below /");
    BOOST_TEST(outcome(prepare_job_dir("/", "/42", geteuid(), getegid())) == "Failed: tier root /" + rule + " below /");
    BOOST_TEST(is_real_dir(r));
    BOOST_TEST(entries_in(r) == 0);
}

BOOST_AUTO_TEST_CASE(as_root_moves_a_root_or_leaf_of_another_uid_aside)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string dir = tier.root + "/42";
    make_dir(dir);
    BOOST_REQUIRE(::chown(dir.c_str(), kOtherUid, kOtherGid) == 0);
    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, 1000, 1000)) ==
               "Ready\n" + dir + " belongs to uid 12345, not the job's; moved it aside to " + dir + ".untrusted-X");
    BOOST_TEST(lstat_of(dir).st_uid == 1000u);

    BOOST_REQUIRE(::chown(tier.root.c_str(), kOtherUid, kOtherGid) == 0);
    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, 1000, 1000)) ==
               "Ready\ntier root " + tier.root + " belongs to uid 12345 (mode 0755), not uid 0; moved it aside to " +
                   tier.root + ".untrusted-X");
    BOOST_TEST(lstat_of(tier.root).st_uid == 0u);
}

BOOST_AUTO_TEST_CASE(as_root_gives_created_leaf_to_the_user)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string dir = tier.root + "/alice/42";
    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, kOtherUid, kOtherGid)) == "Ready");
    BOOST_TEST(lstat_of(dir).st_uid == kOtherUid);
    BOOST_TEST(lstat_of(dir).st_gid == kOtherGid);
    BOOST_TEST(mode_of(dir) == 0700u);
    BOOST_TEST(lstat_of(tier.root + "/alice").st_uid == 0u);  // shared level stays root's

    // The same job again (requeued): the directory is the user's, so reused.
    BOOST_TEST(outcome(prepare_job_dir(tier.root, dir, kOtherUid, kOtherGid)) == "Ready");
}

BOOST_AUTO_TEST_CASE(unprivileged_caller_cannot_give_leaf_away_and_leaves_nothing)
{
    // As root: do it as kOtherUid in a child; as a user: as ourselves.
    TierDir tier;
    const uid_t caller = is_root() ? kOtherUid : geteuid();
    const gid_t caller_gid = is_root() ? kOtherGid : getegid();
    if (is_root()) {
        BOOST_REQUIRE(::chmod(tier.tmp.path().c_str(), 0755) == 0);
        BOOST_REQUIRE(::chown(tier.root.c_str(), caller, caller_gid) == 0);
    }
    const std::string dir = tier.root + "/42";
    const std::string text = in_child([&] { return outcome(prepare_job_dir(tier.root, dir, caller + 1, caller_gid)); },
                                      is_root() ? caller : kSameUid, caller_gid);
    BOOST_TEST(text == "Failed: cannot give " + dir + " to uid " + std::to_string(caller + 1) + " gid " +
                           std::to_string(caller_gid) + ": Operation not permitted");
    BOOST_TEST(!exists(dir));  // so that a retry does not find a leftover
}

BOOST_AUTO_TEST_CASE(a_full_tier_is_a_failure_with_its_errno)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    test::TempDir tmp;
    const std::string mnt = tmp / "shm";
    make_dir(mnt);
    const std::string text = in_child([&] {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return std::string("skip: ") + std::strerror(errno);
        // Room for the root inode and two more: the tier root takes one.
        if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m,nr_inodes=3") != 0)
            return std::string("skip: mount tmpfs: ") + std::strerror(errno);
        const int filled = ::open((mnt + "/filler").c_str(), O_WRONLY | O_CREAT, 0644);
        ::close(filled);
        const PrepareResult result = prepare_job_dir(mnt + "/dlstage", mnt + "/dlstage/42", geteuid(), getegid());
        return outcome(result) + " err=" + std::to_string(result.err) + (result.at_tier_parent ? " parent" : "");
    });
    if (skipped(text))
        return;
    BOOST_TEST(text ==
               "Failed: cannot create " + mnt + "/dlstage/42: No space left on device err=" + std::to_string(ENOSPC));
}

BOOST_AUTO_TEST_CASE(the_stager_opens_only_a_job_dir_below_root_owned_levels)
{
    TierDir tier;
    const std::string dir = tier.root + "/42";
    make_dir(dir, 0700);
    const OpenResult opened = open_job_dir(tier.root, dir);
    if (is_root()) {
        BOOST_TEST(opened.problem == "");
        BOOST_TEST(opened.dir.valid());
    } else {
        // A user's own temporary directory is not root's: refused.
        BOOST_TEST(opened.problem.find("not uid 0; refusing to use it") != std::string::npos);
    }
    BOOST_TEST(open_job_dir(tier.root, tier.root + "/43").problem ==
               "cannot open " + tier.root + "/43: No such file or directory");
    if (!is_root())
        return;
    ::chmod(tier.root.c_str(), 0777);
    BOOST_TEST(open_job_dir(tier.root, dir).problem ==
               "tier root " + tier.root + " is writable by group or others (mode 0777); refusing to use it");
    ::chmod(tier.root.c_str(), 0755);
    // As another user: the job directory must be the caller's.
    BOOST_REQUIRE(::chmod(tier.tmp.path().c_str(), 0755) == 0);
    const std::string text = in_child([&] { return open_job_dir(tier.root, dir).problem; }, kOtherUid, kOtherGid);
    BOOST_TEST(text == dir + " belongs to uid 0, not to you");
}

// A shared tier: the prologs of a job's three nodes walk it at once.  Two
// judge the same squatted directory; the first moves it aside and makes a
// good one; the second's rename, by name, must not move that good one away.
BOOST_AUTO_TEST_CASE(a_good_entry_another_nodes_prolog_made_meanwhile_is_not_moved_aside)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    TierDir tier;
    const std::string squatted = tier.root + "/42";
    make_dir(squatted, 0777);
    BOOST_REQUIRE(::chown(squatted.c_str(), kOtherUid, kOtherGid) == 0);
    tier_walk::Level parent;
    parent.fd = Fd(::open(tier.root.c_str(), O_PATH | O_DIRECTORY));
    parent.shown = parent.real = tier.root;
    BOOST_REQUIRE(quick_stat(parent.fd.get(), parent.facts));
    QuickStat judged;  // what this node found wrong
    BOOST_REQUIRE(quick_stat(parent.fd.get(), "42", AT_SYMLINK_NOFOLLOW, judged));
    // Meanwhile the other node: the squatted one aside, a good one made.
    BOOST_REQUIRE(::rename(squatted.c_str(), (tier.root + "/42.untrusted-other").c_str()) == 0);
    make_dir(squatted, 0700);
    const ino_t good = lstat_of(squatted).st_ino;
    std::vector<std::string> repairs;
    tier_walk::TierWalk::move_aside(parent, "42", squatted, "belongs to uid 12345", false, &repairs, &judged);
    BOOST_TEST(is_real_dir(squatted));
    BOOST_TEST(lstat_of(squatted).st_ino == good);
    BOOST_TEST(entries_in(tier.root) == 2);  // 42 and the other node's 42.untrusted-other
    BOOST_REQUIRE(repairs.size() == 1u);
    BOOST_TEST(repairs.front() == squatted + " was replaced meanwhile (by another node's prolog?); left in place");
    // What this node judged, still there: moved aside as before.
    make_dir(tier.root + "/43", 0777);
    QuickStat bad;
    BOOST_REQUIRE(quick_stat(parent.fd.get(), "43", AT_SYMLINK_NOFOLLOW, bad));
    tier_walk::TierWalk::move_aside(parent, "43", tier.root + "/43", "is writable by others", false, &repairs, &bad);
    BOOST_TEST(!exists(tier.root + "/43"));
    BOOST_TEST(entries_in(tier.root) == 3);
}

BOOST_AUTO_TEST_SUITE_END()
