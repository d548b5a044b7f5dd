#include "lib/safe_fs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {

// The components of an absolute path, or nothing if it is relative or has an
// empty, "." or ".." component.  Refused rather than normalised: a path that
// needs normalising did not come from a path template.
std::optional<std::vector<std::string>> components(const std::string& path)
{
    if (path.empty() || path[0] != '/')
        return std::nullopt;
    std::vector<std::string> parts = split(std::string_view(path).substr(1), '/');
    for (const std::string& part : parts)
        if (part.empty() || part == "." || part == "..")
            return std::nullopt;
    return parts;
}

std::string path_of(const std::vector<std::string>& parts)
{
    return "/" + join(parts, "/");
}

const char* const kPathRule = "must be an absolute path without empty, '.' or '..' components";

// A tier path split for the walk: the root's parent (the admin's), the
// root's name, and dir's components below the root (never empty).
struct TierPath {
    std::string root;
    std::string parent_path;
    std::string root_name;
    std::vector<std::string> below;
};

// Why root/dir cannot be walked, or "" (then `out` is filled).
std::string split_tier_path(const std::string& root, const std::string& dir, TierPath& out)
{
    const auto root_parts = components(root);
    if (!root_parts || root_parts->empty())
        return "tier root " + shown_path(root) + " " + kPathRule + " below /";
    const auto parts = components(dir);
    if (!parts)
        return "directory " + shown_path(dir) + " " + kPathRule;
    if (parts->size() <= root_parts->size() || !std::equal(root_parts->begin(), root_parts->end(), parts->begin()))
        return "directory " + shown_path(dir) + " is not below tier root " + shown_path(root);
    out.root = root;
    out.parent_path = path_of(std::vector<std::string>(root_parts->begin(), root_parts->end() - 1));
    out.root_name = root_parts->back();
    out.below.assign(parts->begin() + static_cast<std::ptrdiff_t>(root_parts->size()), parts->end());
    return "";
}

// The path the kernel gives an open directory (what mountinfo lists), or
// "" if it cannot tell.
std::string kernel_path(const Fd& fd)
{
    char buf[4096];
    const std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf)
        return "";
    return std::string(buf, static_cast<std::size_t>(n));
}

std::string child_path(const std::string& parent, const std::string& name)
{
    return parent == "/" ? "/" + name : parent + "/" + name;
}

// Lazily unmounts whatever is mounted on `name` in dirfd, through the fd so
// that no path above it is resolved again; the name itself is never
// followed.  0, or the errno (EINVAL: nothing mounted there).
int detach_at(int dirfd, const std::string& name)
{
    const std::string through_fd = "/proc/self/fd/" + std::to_string(dirfd) + "/" + name;
    return ::umount2(through_fd.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0 ? 0 : errno;
}

// Why an entry is not a level root code may build on, or "": it must be a
// real directory owned by root or trusted_uid (the caller), and writable
// by nobody else.
std::string distrust(const QuickStat& f, uid_t trusted_uid)
{
    if (S_ISLNK(f.mode))
        return "is a symlink";
    if (!S_ISDIR(f.mode))
        return "is not a directory";
    if (f.uid != trusted_uid && f.uid != 0)
        return "belongs to uid " + std::to_string(f.uid) + " (mode " + octal_mode(f.mode) + "), not uid " +
               std::to_string(trusted_uid);
    if ((f.mode & (S_IWGRP | S_IWOTH)) != 0)
        return "is writable by group or others (mode " + octal_mode(f.mode) + ")";
    return "";
}

// ---------------------------------------------------------------------------
// The walk from the tier root's parent down to the parent of a job directory.

// One directory of the walk: an O_PATH fd, its facts, and its names.
struct Level {
    Fd fd;
    QuickStat facts;
    std::string shown;  // as configured, for messages
    std::string real;   // as the kernel names it, for mountinfo
};

// Ends a walk early with a failure.
struct WalkFailure {
    std::string problem;
    int err = 0;
    bool at_tier_parent = false;
};

[[noreturn]] void fail_walk(std::string problem, int err = 0, bool at_tier_parent = false)
{
    throw WalkFailure{std::move(problem), err, at_tier_parent};
}

class TierWalk {
public:
    TierWalk(Untrusted on_untrusted, uid_t trusted_uid, std::vector<std::string>* repairs)
        : on_untrusted_(on_untrusted), trusted_uid_(trusted_uid), repairs_(repairs)
    {
    }

    // The admin's directory holding the tier root; may be reached through
    // the admin's symlinks.  Missing: nothing there (quiet) or a node fault.
    std::optional<Level> open_tier_parent(const TierPath& tp, bool missing_is_failure)
    {
        Level level;
        level.fd = Fd(::open(tp.parent_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!level.fd.valid()) {
            const int err = errno;
            if (err == ENOENT && !missing_is_failure)
                return std::nullopt;
            if (err == ENOENT)
                fail_walk("tier root " + shown_path(tp.root) + " is missing and so is its parent " + shown_path(tp.parent_path),
                          err, true);
            fail_walk(cannot("open", shown_path(tp.parent_path), err) + " (the parent of tier root " + shown_path(tp.root) + ")",
                      err, true);
        }
        if (!quick_stat(level.fd.get(), level.facts))
            fail_walk(cannot("stat", shown_path(tp.parent_path), errno), errno, true);
        level.shown = tp.parent_path;
        level.real = kernel_path(level.fd);
        if (level.real.empty())
            fail_walk("cannot tell where " + shown_path(tp.parent_path) + " is (/proc not mounted?)", 0, true);
        return level;
    }

    // A level below `parent`: the tier root (is_root) or a directory between
    // it and the job directory.  Nothing there: created if `create`, else
    // std::nullopt.
    std::optional<Level> open_level(const Level& parent, const std::string& name, bool is_root, bool create)
    {
        const std::string label = (is_root ? "tier root " : "") + shown_path(child_path(parent.shown, name));
        for (int attempt = 0; attempt < kAttempts; ++attempt) {
            Level level;
            level.shown = child_path(parent.shown, name);
            level.real = child_path(parent.real, name);
            // A mount is judged by mountinfo before anything asks it: a FUSE
            // server may refuse root (EACCES) or answer nonsense (EIO), which
            // must not read as a fault of the node.  Only the admin mounts a
            // file system at a tier root, and never a FUSE one.
            const std::optional<MountEntry> mount = MountTable::current().at(level.real);
            if (mount && (mount->is_fuse() || !is_root)) {
                untrusted(parent, name, label, "is a mount point (" + mount->fstype + ")", true);
                continue;
            }
            level.fd = open_passage_at(parent.fd.get(), name);
            if (!level.fd.valid()) {
                const int err = errno;
                if (err == ENOENT) {
                    if (!create)
                        return std::nullopt;
                    make_level(parent, name, label);
                    continue;
                }
                // A symlink or a file (ENOTDIR), a loop, something odd.
                QuickStat f;
                std::string why = quick_stat(parent.fd.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, f)
                                      ? distrust(f, trusted_uid_)
                                      : "";
                untrusted(parent, name, label, why.empty() ? cannot("open", "it", err) : why);
                continue;
            }
            // What cannot even be examined was not made by root: untrusted.
            if (!quick_stat(level.fd.get(), level.facts)) {
                untrusted(parent, name, label, cannot("examine", "it", errno),
                          MountTable::current().at(level.real).has_value());
                continue;
            }
            std::string why = distrust(level.facts, trusted_uid_);
            if (why.empty() && !is_root && level.facts.dev != parent.facts.dev)
                why = "is on another file system than the tier root";
            if (why.empty())
                return level;
            untrusted(parent, name, label, why);
        }
        fail_walk(label + " keeps being replaced by something untrusted; giving up");
    }

private:
    static constexpr int kAttempts = 5;

    void make_level(const Level& parent, const std::string& name, const std::string& label)
    {
        if (::mkdirat(parent.fd.get(), name.c_str(), 0755) != 0) {
            const int err = errno;
            if (err == EEXIST)
                return;  // someone was quicker: look at what they made
            fail_walk(cannot("create", label, err), err);
        }
        // mkdirat's mode is cut by the umask, and the job's user must be able
        // to pass through the shared levels to reach their own directory.
        const Fd made(::openat(parent.fd.get(), name.c_str(), kDirFlags));
        if (made.valid() && ::fchmod(made.get(), 0755) != 0)
            fail_walk(cannot("set the mode of", label, errno), errno);
    }

    // Not trusted: moved aside by the prolog, refused by the others.
    void untrusted(const Level& parent, const std::string& name, const std::string& label, const std::string& why,
                   bool mounted = false)
    {
        if (on_untrusted_ == Untrusted::Refuse)
            fail_walk(label + " " + why + "; refusing to use it");
        move_aside(parent, name, label, why, mounted, repairs_);
    }

public:
    // Renames `name` out of the way within parent, detaching a mount on it
    // first; the new name is logged with what was wrong with it.
    static void move_aside(const Level& parent, const std::string& name, const std::string& label,
                           const std::string& why, bool mounted, std::vector<std::string>* repairs)
    {
        if (mounted) {
            const int err = detach_at(parent.fd.get(), name);
            if (err != 0 && err != EINVAL)
                fail_walk(cannot("unmount", label, err), err);
            if (repairs && err == 0)
                repairs->push_back(label + " " + why + ": detached the mount on it");
        }
        char stamp[32];
        const std::time_t now = std::time(nullptr);
        std::tm tm {};
        ::gmtime_r(&now, &tm);
        std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
        for (int n = 0; n < 100; ++n) {
            const std::string aside = name + ".untrusted-" + stamp + "-" + std::to_string(::getpid()) +
                                      (n ? "-" + std::to_string(n) : "");
            if (::renameat2(parent.fd.get(), name.c_str(), parent.fd.get(), aside.c_str(), RENAME_NOREPLACE) == 0) {
                if (repairs)
                    repairs->push_back(label + " " + why + "; moved it aside to " +
                                       shown_path(child_path(parent.shown, aside)));
                return;
            }
            const int err = errno;
            if (err == ENOENT)
                return;  // gone meanwhile: nothing to move
            if (err == EBUSY && !mounted) {
                move_aside(parent, name, label, why, true, repairs);  // a mount on it after all
                return;
            }
            if (err != EEXIST)
                fail_walk(cannot("move aside", label, err) + " (it " + why + ")", err);
        }
        fail_walk("cannot find a free name to move " + label + " aside");
    }

private:
    Untrusted on_untrusted_;
    uid_t trusted_uid_;
    std::vector<std::string>* repairs_;
};

// From the tier root's parent to the directory holding `dir`; nothing if
// something on the way is missing (and create is false).
std::optional<Level> walk_to_parent(TierWalk& walk, const TierPath& tp, bool create)
{
    std::optional<Level> current = walk.open_tier_parent(tp, create);
    if (!current)
        return std::nullopt;
    current = walk.open_level(*current, tp.root_name, true, create);
    for (std::size_t i = 0; current && i + 1 < tp.below.size(); ++i)
        current = walk.open_level(*current, tp.below[i], false, create);
    return current;
}

// ---------------------------------------------------------------------------
// prepare_job_dir: the leaf

// The job's own directory: created for uid:gid, or reused if it already is
// uid's; anything else there (another user's directory: a job id used again
// after Slurm's state was reset; a symlink; a mount) is moved aside.  It is
// reached with an O_PATH lookup and a cached statx, and opened as "." of
// that: a mount made on it meanwhile is never entered.  A directory created
// here is removed again if it cannot be completed, so that it does not block
// a retry as "belongs to uid 0".
Fd make_leaf(const Level& parent, const std::string& name, uid_t uid, gid_t gid, std::vector<std::string>& repairs)
{
    const std::string label = shown_path(child_path(parent.shown, name));
    const std::string real = child_path(parent.real, name);
    for (int attempt = 0; attempt < 5; ++attempt) {
        if (const std::optional<MountEntry> mount = MountTable::current().at(real)) {
            TierWalk::move_aside(parent, name, label, "is a mount point (" + mount->fstype + ")", true, &repairs);
            continue;
        }
        // 0700 from the start: nobody else can put anything in before the chown.
        const bool created = ::mkdirat(parent.fd.get(), name.c_str(), 0700) == 0;
        if (!created && errno != EEXIST)
            fail_walk(cannot("create", label, errno), errno);
        const Fd passage = open_passage_at(parent.fd.get(), name);
        QuickStat f;
        if (!passage.valid() || !quick_stat(passage.get(), f)) {
            const int err = errno;
            QuickStat link;
            const bool is_link = quick_stat(parent.fd.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, link) &&
                                 !S_ISDIR(link.mode);
            TierWalk::move_aside(parent, name, label,
                                 is_link ? (S_ISLNK(link.mode) ? "is a symlink" : "is not a directory")
                                         : cannot("examine", "it", err),
                                 MountTable::current().at(real).has_value(), &repairs);
            continue;
        }
        // A directory the caller owns is one another node's prolog is
        // making right now (a state_dir or tier shared by the nodes), or
        // one an interrupted run left: only root can make one here.
        const bool ours = created || f.uid == ::geteuid();
        if (!ours && f.uid != uid) {
            TierWalk::move_aside(parent, name, label, "belongs to uid " + std::to_string(f.uid) + ", not the job's",
                                 false, &repairs);
            continue;
        }
        if (f.dev != parent.facts.dev) {
            TierWalk::move_aside(parent, name, label, "is on another file system than the tier root", true,
                                 &repairs);
            continue;
        }
        Fd fd = reopen_for_reading(passage);
        try {
            if (!fd.valid())
                fail_walk(cannot("open", label, errno), errno);
            struct stat st {};
            if (::fstat(fd.get(), &st) != 0)
                fail_walk(cannot("stat", label, errno), errno);
            if (ours ? ::fchown(fd.get(), uid, gid) != 0
                     : st.st_gid != gid && ::fchown(fd.get(), static_cast<uid_t>(-1), gid) != 0) {
                // Fails unless the caller is root or uid itself (the unit tests as a user).
                const int err = errno;
                fail_walk(cannot("give", label + " to uid " + std::to_string(uid) + " gid " + std::to_string(gid), err),
                          err);
            }
            if (::fchmod(fd.get(), 0700) != 0)
                fail_walk(cannot("set the mode of", label, errno), errno);
            return fd;
        } catch (const WalkFailure&) {
            if (created) {
                fd.reset();
                ::unlinkat(parent.fd.get(), name.c_str(), AT_REMOVEDIR);
            }
            throw;
        }
    }
    fail_walk(label + " keeps being replaced by something untrusted; giving up");
}

// Runs body on root/dir split for a walk; a malformed path or a walk that
// failed comes back as its failure.
std::optional<WalkFailure> walk_tier(const std::string& root, const std::string& dir,
                                     const std::function<void(const TierPath&)>& body)
{
    TierPath tp;
    if (std::string problem = split_tier_path(root, dir, tp); !problem.empty())
        return WalkFailure{problem};
    try {
        body(tp);
    } catch (const WalkFailure& failure) {
        return failure;
    }
    return std::nullopt;
}

// The directory holding `dir`, reached as the caller's trusted walk; its
// problem (with `outcome` appended) or nothing when something on the way is
// missing.
struct ParentOfDir {
    std::optional<Level> level;
    std::string leaf;
    std::string problem;
};

ParentOfDir open_parent_within(const std::string& root, const std::string& dir, const char* outcome)
{
    ParentOfDir out;
    if (auto failure = walk_tier(root, dir, [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, ::geteuid(), nullptr);
            out.level = walk_to_parent(walk, tp, false);
            out.leaf = tp.below.back();
        }))
        out.problem = failure->problem + "; " + outcome;
    return out;
}

}  // namespace

PrepareResult prepare_job_dir(const std::string& root, const std::string& dir, uid_t uid, gid_t gid,
                              Untrusted untrusted)
{
    PrepareResult result;
    if (auto failure = walk_tier(root, dir, [&](const TierPath& tp) {
            TierWalk walk(untrusted, ::geteuid(), &result.repairs);
            const std::optional<Level> parent = walk_to_parent(walk, tp, true);
            result.dir = make_leaf(*parent, tp.below.back(), uid, gid, result.repairs);
        })) {
        result.problem = failure->problem;
        result.err = failure->err;
        result.at_tier_parent = failure->at_tier_parent;
    }
    return result;
}

OpenResult open_job_dir(const std::string& root, const std::string& dir)
{
    OpenResult result;
    if (auto failure = walk_tier(root, dir, [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, 0, nullptr);
            const std::optional<Level> parent = walk_to_parent(walk, tp, false);
            if (!parent)
                fail_walk(shown_path(dir) + " does not exist");
            const std::string& name = tp.below.back();
            const std::string label = shown_path(dir);
            const Fd passage = open_passage_at(parent->fd.get(), name);
            QuickStat f;
            if (!passage.valid() || !quick_stat(passage.get(), f))
                fail_walk(cannot("open", label, errno), errno);
            if (f.uid != ::geteuid())
                fail_walk(label + " belongs to uid " + std::to_string(f.uid) + ", not to you");
            if (!S_ISDIR(f.mode))
                fail_walk(label + " is not a directory");
            if (f.dev != parent->facts.dev || MountTable::current().at(child_path(parent->real, name)).has_value())
                fail_walk(label + " is a mount point");
            result.dir = reopen_for_reading(passage);
            if (!result.dir.valid())
                fail_walk(cannot("open", label, errno), errno);
        }))
        result.problem = failure->problem;
    return result;
}

OpenResult open_trusted_dir(const std::string& root, const std::string& dir, bool create)
{
    OpenResult result;
    const bool is_root = dir == root;  // then only the walk to root is wanted
    if (auto failure = walk_tier(root, is_root ? root + "/-" : dir, [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, ::geteuid(), nullptr);
            std::optional<Level> level = walk.open_tier_parent(tp, create);
            if (level)
                level = walk.open_level(*level, tp.root_name, true, create);
            for (std::size_t i = 0; level && !is_root && i < tp.below.size(); ++i)
                level = walk.open_level(*level, tp.below[i], false, create);
            if (!level)
                fail_walk(shown_path(dir) + " does not exist");
            result.dir = std::move(level->fd);
        }))
        result.problem = failure->problem;
    return result;
}

namespace {
RemoveResult remove_within(const std::string& root, const std::string& dir, const std::optional<Owner>& as)
{
    RemoveResult result;
    ParentOfDir parent = open_parent_within(root, dir, "nothing removed");
    if (!parent.problem.empty())
        result.problems.push_back(parent.problem);
    if (!parent.level)
        return result;
    // dir itself is checked like everything inside (symlink, mount point).
    remove_tree_on(parent.level->fd.get(), parent.leaf, parent.level->facts.dev, parent.level->shown, result, as);
    return result;
}
}  // namespace

RemoveResult remove_tree_within(const std::string& root, const std::string& dir)
{
    return remove_within(root, dir, std::nullopt);
}

RemoveResult remove_tree_within(const std::string& root, const std::string& dir, const Owner& as)
{
    return remove_within(root, dir, as);
}

namespace {
// Reaches the directory holding mount point `point` (below parent.real)
// without entering a mount on the way: nothing if it is nested in another
// mount, or its way changed meanwhile (the next round sees it anew).
std::optional<Fd> holder_of(const Level& parent, const std::string& point, std::string& leaf)
{
    const std::vector<std::string> parts = split(std::string_view(point).substr(parent.real.size() + 1), '/');
    Fd current(::fcntl(parent.fd.get(), F_DUPFD_CLOEXEC, 0));
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        Fd next = open_passage_at(current.get(), parts[i]);
        QuickStat f;
        if (!next.valid() || !quick_stat(next.get(), f) || f.dev != parent.facts.dev)
            return std::nullopt;
        current = std::move(next);
    }
    leaf = parts.back();
    return current;
}
}  // namespace

DetachResult detach_mounts_within(const std::string& root, const std::string& dir)
{
    DetachResult result;
    ParentOfDir parent = open_parent_within(root, dir, "nothing unmounted");
    if (!parent.problem.empty())
        result.problems.push_back(parent.problem);
    if (!parent.level)
        return result;
    const std::string real_dir = child_path(parent.level->real, parent.leaf);
    // Rounds, because mounts can be stacked on one point, and one detached
    // takes those nested in it along.
    for (int round = 0; round < 16; ++round) {
        const std::vector<std::string> points = MountTable::current().points_within(real_dir);
        if (points.empty())
            return result;
        bool progress = false;
        for (const std::string& point : points) {
            std::string leaf;
            const std::optional<Fd> holder = holder_of(*parent.level, point, leaf);
            if (!holder)
                continue;
            const int err = detach_at(holder->get(), leaf);
            if (err == 0) {
                ++result.detached;
                progress = true;
            } else if (err != EINVAL) {
                result.problems.push_back(cannot("unmount", shown_path(point), err));
                return result;
            }
        }
        if (!progress)
            break;
    }
    const std::vector<std::string> left = MountTable::current().points_within(real_dir);
    if (!left.empty())
        result.problems.push_back("mounts stay below " + shown_path(dir) + " (" + shown_path(left.front()) +
                                  (left.size() > 1 ? " and " + std::to_string(left.size() - 1) + " more" : "") +
                                  "); left in place");
    return result;
}

}  // namespace dlstage
