#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <regex>
#include <grp.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/safe_fs.hpp"
#include "tests/unit/deep_tree.hpp"
#include "tests/unit/in_child.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;
using test::in_child;
using test::in_mount_namespace;
using test::kSameUid;
using test::skipped;

namespace {

constexpr uid_t kOtherUid = 12345;
constexpr gid_t kOtherGid = 23456;

bool is_root()
{
    return geteuid() == 0;
}

struct stat lstat_of(const std::string& path)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        BOOST_FAIL("lstat " + path + ": " + std::strerror(errno));
    return st;
}

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

bool is_real_dir(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

mode_t mode_of(const std::string& path)
{
    return lstat_of(path).st_mode & 07777;
}

void make_dir(const std::string& path, mode_t mode = 0755)
{
    if (::mkdir(path.c_str(), mode) != 0)
        BOOST_FAIL("mkdir " + path + ": " + std::strerror(errno));
}

void make_file(const std::string& path, const std::string& content = "data")
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        BOOST_FAIL("create " + path + ": " + std::strerror(errno));
    BOOST_REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
}

void make_link(const std::string& target, const std::string& path)
{
    if (::symlink(target.c_str(), path.c_str()) != 0)
        BOOST_FAIL("symlink " + path + ": " + std::strerror(errno));
}

int entries_in(const std::string& path)
{
    int n = 0;
    DIR* dir = ::opendir(path.c_str());
    BOOST_REQUIRE(dir);
    while (const dirent* e = ::readdir(dir))
        n += std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0;
    ::closedir(dir);
    return n;
}

// "removed=N" and one line per problem: compares whole outcomes at once.
std::string outcome(const RemoveResult& result)
{
    std::string text = "removed=" + std::to_string(result.removed);
    for (const std::string& problem : result.problems)
        text += "\n" + problem;
    return text;
}

// "Ready" or "Failed: PROBLEM", then one line per repair, with the time
// and pid of a moved-aside name replaced by X so outcomes compare whole.
std::string outcome(const PrepareResult& result)
{
    std::string text = result.ok() ? "Ready" : "Failed: " + result.problem;
    for (const std::string& repair : result.repairs)
        text += "\n" + repair;
    static const std::regex stamp(R"(\.untrusted-[0-9TZ]+-[0-9]+(-[0-9]+)?)");
    return std::regex_replace(text, stamp, ".untrusted-X");
}

// A tier root inside a temporary directory.
struct Tier {
    test::TempDir tmp;
    std::string root = tmp / "tier";
    Tier() { make_dir(root); }
};

// Sets the umask for one scope: the modes must not depend on the caller's.
struct Umask {
    mode_t old;
    explicit Umask(mode_t mask) : old(::umask(mask)) {}
    ~Umask() { ::umask(old); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(safe_fs)

// ---------------------------------------------------------------- prepare

BOOST_AUTO_TEST_CASE(creates_nested_leaf_with_exact_modes_and_owner)
{
    Tier tier;
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
    Tier tier;
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
    Tier tier;
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
    Tier tier;
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
    Tier tier;
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
    Tier tier;
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
    BOOST_TEST(outcome(prepare_job_dir("/", "/42", geteuid(), getegid())) ==
               "Failed: tier root /" + rule + " below /");
    BOOST_TEST(is_real_dir(r));
    BOOST_TEST(entries_in(r) == 0);
}

BOOST_AUTO_TEST_CASE(as_root_moves_a_root_or_leaf_of_another_uid_aside)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: needs root");
        return;
    }
    Tier tier;
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
    Tier tier;
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
    Tier tier;
    const uid_t caller = is_root() ? kOtherUid : geteuid();
    const gid_t caller_gid = is_root() ? kOtherGid : getegid();
    if (is_root()) {
        BOOST_REQUIRE(::chmod(tier.tmp.path().c_str(), 0755) == 0);
        BOOST_REQUIRE(::chown(tier.root.c_str(), caller, caller_gid) == 0);
    }
    const std::string dir = tier.root + "/42";
    const std::string text = in_child(
        [&] { return outcome(prepare_job_dir(tier.root, dir, caller + 1, caller_gid)); },
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
    BOOST_TEST(text == "Failed: cannot create " + mnt + "/dlstage/42: No space left on device err=" +
                           std::to_string(ENOSPC));
}

BOOST_AUTO_TEST_CASE(the_stager_opens_only_a_job_dir_below_root_owned_levels)
{
    Tier tier;
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

// ---------------------------------------------------------------- remove

BOOST_AUTO_TEST_CASE(removes_tree_but_never_what_symlinks_point_to)
{
    Tier tier;
    const std::string outside = tier.tmp / "outside";
    make_dir(outside);
    make_file(outside + "/precious");
    make_file(tier.tmp / "precious-file");

    const std::string job = tier.root + "/42";
    make_dir(job);                                         // 1
    make_file(job + "/file");                              // 2
    make_dir(job + "/empty");                              // 3
    make_dir(job + "/a");                                  // 4
    make_dir(job + "/a/b");                                // 5
    make_dir(job + "/a/b/c");                              // 6
    make_file(job + "/a/b/c/deep");                        // 7
    make_link(outside, job + "/link-to-dir");              // 8
    make_link(tier.tmp / "precious-file", job + "/a/link-to-file");  // 9
    make_link("/nonexistent", job + "/dangling");          // 10
    make_file(job + "/with space");                        // 11
    make_dir(job + "/new\nline");                          // 12
    make_file(job + "/new\nline/\xff\xfe\x80 not utf-8");  // 13
    BOOST_REQUIRE(::mkfifo((job + "/fifo").c_str(), 0600) == 0);  // 14
    // A symlink to a directory, deep down where the walk descends.
    make_link(outside, job + "/a/b/c/outside");            // 15

    BOOST_TEST(outcome(remove_tree_within(tier.root, job)) == "removed=15");
    BOOST_TEST(!exists(job));
    BOOST_TEST(is_real_dir(tier.root));
    BOOST_TEST(exists(outside + "/precious"));
    BOOST_TEST(exists(tier.tmp / "precious-file"));

    BOOST_TEST(outcome(remove_tree_within(tier.root, job)) == "removed=0");  // idempotent
}

BOOST_AUTO_TEST_CASE(removes_nested_job_dir_only)
{
    Tier tier;
    make_dir(tier.root + "/alice");
    make_dir(tier.root + "/alice/42");
    make_dir(tier.root + "/alice/43");
    make_file(tier.root + "/alice/42/x");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/alice/42")) == "removed=2");
    BOOST_TEST(is_real_dir(tier.root + "/alice/43"));
}

BOOST_AUTO_TEST_CASE(missing_dir_or_root_is_success)
{
    Tier tier;
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.root, tier.root + "/alice/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.tmp / "none", tier.tmp / "none/42")) == "removed=0");
    BOOST_TEST(outcome(remove_tree_within(tier.tmp / "none/tier", tier.tmp / "none/tier/42")) == "removed=0");
}

BOOST_AUTO_TEST_CASE(symlink_as_dir_or_on_the_way_removes_nothing)
{
    Tier tier;
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
    Tier tier;
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
    Tier tier;
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
    BOOST_TEST(outcome(result) ==
               "removed=3\ncannot remove '" + job + "/a/stuck\\x0aname': Operation not permitted");
    BOOST_TEST(exists(stuck));
    BOOST_TEST(!exists(job + "/b"));
    BOOST_TEST(!exists(job + "/z"));
}

BOOST_AUTO_TEST_CASE(owner_removes_read_only_directories)
{
    // What the stager does, as the user, with partial data extracted
    // read-only from an archive.  As root: done as kOtherUid in a child.
    Tier tier;
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
        for (const char* p : {"", "/.partial-data", "/.partial-data/ro", "/.partial-data/ro/f", "/.partial-data/ro/inner",
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
    Tier tier;
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
    BOOST_TEST(outcome(result) == "removed=3\ncannot remove " + job +
                                      "/team/victim/results.txt: Permission denied");
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

BOOST_AUTO_TEST_CASE(mount_points_are_left_in_place)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    Tier tier;
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
                           "removed=0\n" + job + "/mnt" + other_fs + "nothing removed\n" +
                           "removed=3\n" + job + "/mnt" + other_fs + "left in place\n" +
                           "inside kept");
    BOOST_TEST(is_real_dir(job + "/mnt"));  // the directory under the mount, now unmounted
    BOOST_TEST(!exists(job + "/a"));
    BOOST_TEST(!exists(job + "/z"));
}

std::string mount_tmpfs(const std::string& where)
{
    return ::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=1m") == 0 ? "" : "skip: mount tmpfs: " +
                                                                                 std::string(std::strerror(errno));
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
    struct stat here {}, up {};
    return ::stat(path.c_str(), &here) == 0 && ::stat((path + "/..").c_str(), &up) == 0 && here.st_dev != up.st_dev;
}

BOOST_AUTO_TEST_CASE(detach_unmounts_what_is_below_but_never_through_a_symlink)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    Tier tier;
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
        mount_tmpfs(job + "/plain");        // stacked: two rounds
        std::string out;
        out += detached(detach_mounts_within(tier.root, job + "/link"));   // the symlink is not followed
        out += detached(detach_mounts_within(tier.root, job + "/gone"));   // nothing there
        out += detached(detach_mounts_within(tier.root, job + "/image"));  // it, and what is inside along
        out += detached(detach_mounts_within(tier.root, job + "/image"));  // again: harmless
        out += detached(detach_mounts_within(tier.root, "/etc/x"));         // outside the tier
        out += detached(detach_mounts_within(tier.root, job));              // the rest below the job dir
        out += mounted(outside / "target") ? "target still mounted\n" : "target unmounted\n";
        out += mounted(job + "/plain") || mounted(job + "/image") ? "job mounts left" : "job mounts gone";
        return out;
    });
    if (skipped(text))
        return;
    BOOST_TEST(text == "detached=0\ndetached=0\ndetached=1\ndetached=0\ndetached=0\ndirectory /etc/x is not below "
                       "tier root " + tier.root + "; nothing unmounted\ndetached=2\ntarget still mounted\njob mounts gone");
}

BOOST_AUTO_TEST_CASE(a_mount_on_the_leaf_is_detached_and_moved_aside)
{
    if (!is_root()) {
        BOOST_TEST_MESSAGE("skipped: mounting needs root");
        return;
    }
    Tier tier;
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
