#include "tier/tier_walk.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::tier_walk {

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
}  // namespace

void fail_walk(std::string problem, int err, bool at_tier_parent)
{
    throw WalkFailure{std::move(problem), err, at_tier_parent};
}

std::string child_path(const std::string& parent, const std::string& name)
{
    return parent == "/" ? "/" + name : parent + "/" + name;
}

int detach_at(int dirfd, const std::string& name)
{
    const std::string through_fd = "/proc/self/fd/" + std::to_string(dirfd) + "/" + name;
    return ::umount2(through_fd.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0 ? 0 : errno;
}

std::optional<Level> TierWalk::open_tier_parent(const TierPath& tp, bool missing_is_failure)
{
    Level level;
    level.fd = Fd(::open(tp.parent_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!level.fd.valid()) {
        const int err = errno;
        if (err == ENOENT && !missing_is_failure)
            return std::nullopt;
        if (err == ENOENT)
            fail_walk("tier root " + shown_path(tp.root) + " is missing and so is its parent " +
                          shown_path(tp.parent_path),
                      err, true);
        fail_walk(cannot("open", shown_path(tp.parent_path), err) + " (the parent of tier root " + shown_path(tp.root) +
                      ")",
                  err, true);
    }
    if (!quick_stat(level.fd.get(), level.facts))
        fail_walk(cannot("stat", shown_path(tp.parent_path), errno), errno, true);
    level.shown = tp.parent_path;
    level.real = kernel_path(level.fd.get());
    if (level.real.empty())
        fail_walk("cannot tell where " + shown_path(tp.parent_path) + " is (/proc not mounted?)", 0, true);
    return level;
}

std::optional<Level> TierWalk::open_level(const Level& parent, const std::string& name, bool is_root, bool create)
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
            const bool seen = quick_stat(parent.fd.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, f);
            std::string why = seen ? distrust(f, trusted_uid_) : "";
            untrusted(parent, name, label, why.empty() ? cannot("open", "it", err) : why, false, seen ? &f : nullptr);
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
        untrusted(parent, name, label, why, false, &level.facts);
    }
    fail_walk(label + " keeps being replaced by something untrusted; giving up");
}

void TierWalk::make_level(const Level& parent, const std::string& name, const std::string& label)
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

void TierWalk::untrusted(const Level& parent, const std::string& name, const std::string& label, const std::string& why,
                         bool mounted, const QuickStat* judged)
{
    if (on_untrusted_ == Untrusted::Refuse)
        fail_walk(label + " " + why + "; refusing to use it");
    move_aside(parent, name, label, why, mounted, repairs_, judged);
}

std::string aside_name(const std::string& name, const std::string& stamp, int n)
{
    return name + ".untrusted-" + stamp + "-" + std::to_string(::getpid()) + (n ? "-" + std::to_string(n) : "");
}

void TierWalk::move_aside(const Level& parent, const std::string& name, const std::string& label,
                          const std::string& why, bool mounted, std::vector<std::string>* repairs,
                          const QuickStat* judged)
{
    if (mounted) {
        const int err = detach_at(parent.fd.get(), name);
        if (err != 0 && err != EINVAL)
            fail_walk(cannot("unmount", label, err), err);
        if (repairs && err == 0)
            repairs->push_back(label + " " + why + ": detached the mount on it");
    }
    const std::string stamp = utc_stamp(std::time(nullptr));
    for (int n = 0; n < 100; ++n) {
        const std::string aside = aside_name(name, stamp, n);
        if (::renameat2(parent.fd.get(), name.c_str(), parent.fd.get(), aside.c_str(), RENAME_NOREPLACE) == 0) {
            // The prologs of all a job's nodes walk a shared tier at once and
            // rename by name: each may have judged the same squatted entry,
            // and the first replaced it by a good one before this rename.
            QuickStat moved;
            if (judged && quick_stat(parent.fd.get(), aside.c_str(), AT_SYMLINK_NOFOLLOW, moved) &&
                (moved.ino != judged->ino || moved.dev != judged->dev)) {
                const bool back =
                    ::renameat2(parent.fd.get(), aside.c_str(), parent.fd.get(), name.c_str(), RENAME_NOREPLACE) == 0;
                if (repairs)
                    repairs->push_back(
                        label + " was replaced meanwhile (by another node's prolog?); " +
                        (back ? "left in place" : "it stays at " + shown_path(child_path(parent.shown, aside))));
                return;  // the caller looks at the name again
            }
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

ParentOfDir open_parent_within(const std::string& root, const std::string& dir, const char* outcome,
                               std::vector<std::string>& problems)
{
    ParentOfDir out;
    if (auto failure = walk_tier(root, dir, [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, ::geteuid(), nullptr);
            out.level = walk_to_parent(walk, tp, false);
            out.leaf = tp.below.back();
        }))
        problems.push_back(failure->problem + "; " + outcome);
    return out;
}

}  // namespace dlstage::tier_walk
