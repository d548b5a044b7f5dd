#include "tier/safe_fs.hpp"

#include <cerrno>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/tier_walk.hpp"

namespace dlstage {

using namespace tier_walk;

namespace {

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
                                 MountTable::current().at(real).has_value(), &repairs, is_link ? &link : nullptr);
            continue;
        }
        // A directory the caller owns is one another node's prolog is
        // making right now (a state_dir or tier shared by the nodes), or
        // one an interrupted run left: only root can make one here.
        const bool ours = created || f.uid == ::geteuid();
        if (!ours && f.uid != uid) {
            TierWalk::move_aside(parent, name, label, "belongs to uid " + std::to_string(f.uid) + ", not the job's",
                                 false, &repairs, &f);
            continue;
        }
        if (f.dev != parent.facts.dev) {
            TierWalk::move_aside(parent, name, label, "is on another file system than the tier root", true, &repairs);
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

// The last level of a walk, `label`, open for reading: a directory (else
// the walk fails saying it is not one), on its parent's file system and,
// that being so, not a mount point mountinfo knows of (`mounted`; else the
// walk fails with label + `mount_point`), reopened from its passage.
Fd open_last_level(const Fd& passage, const QuickStat& f, const Level& parent, const std::string& label,
                   const std::function<bool()>& mounted, const char* mount_point)
{
    if (!S_ISDIR(f.mode))
        fail_walk(label + " is not a directory");
    if (f.dev != parent.facts.dev || mounted())
        fail_walk(label + mount_point);
    Fd dir = reopen_for_reading(passage);
    if (!dir.valid())
        fail_walk(cannot("open", label, errno), errno);
    return dir;
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
            const auto mounted = [&] { return MountTable::current().at(child_path(parent->real, name)).has_value(); };
            result.dir = open_last_level(passage, f, *parent, label, mounted, " is a mount point");
        }))
        result.problem = failure->problem;
    return result;
}

OpenResult look_into_dir(const std::string& root, const std::string& dir)
{
    OpenResult result;
    if (auto failure = walk_tier(root, dir, [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, 0, nullptr);  // levels root's, whoever asks
            const std::optional<Level> parent = walk_to_parent(walk, tp, false);
            if (!parent)
                return;
            const std::string& name = tp.below.back();
            const std::string label = shown_path(dir);
            // mountinfo first: a FUSE server must not even be asked for a lookup.
            if (MountTable::current().at(child_path(parent->real, name)).has_value())
                fail_walk(label + " is a mount point; not entered");
            const Fd passage = open_passage_at(parent->fd.get(), name);
            QuickStat f;
            if (!passage.valid() && errno == ENOENT)
                return;
            if (!passage.valid() || !quick_stat(passage.get(), f))
                fail_walk(cannot("open", label, errno) + " (not a directory, or a symlink?)", errno);
            // mountinfo was asked first, above.
            result.dir = open_last_level(
                passage, f, *parent, label, [] { return false; }, " is a mount point; not entered");
        }))
        result.problem = failure->problem;
    return result;
}

OpenResult look_into_tier_root(const std::string& root)
{
    OpenResult result;
    if (auto failure = walk_tier(root, root + "/-", [&](const TierPath& tp) {
            TierWalk walk(Untrusted::Refuse, 0, nullptr);  // root's, whoever asks
            std::optional<Level> level = walk.open_tier_parent(tp, false);
            if (level)
                level = walk.open_level(*level, tp.root_name, true, false);
            if (!level)
                return;
            result.dir = reopen_for_reading(level->fd);
            if (!result.dir.valid())
                fail_walk(cannot("open", shown_path(root), errno), errno);
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
// A claim this node's epilog made earlier and did not finish: removed as
// remove_tree_within does, if it is the job's user's directory; anything
// else under that name (a job id used again after a reset of Slurm's
// state) is left and reported.
void finish_claim(int parent_fd, const std::string& claim, const Level& parent, const Owner& as, RemoveResult& result)
{
    QuickStat f;
    if (!quick_stat(parent_fd, claim.c_str(), AT_SYMLINK_NOFOLLOW, f))
        return;  // none: nothing left over
    if (!S_ISDIR(f.mode) || f.uid != as.uid) {
        result.problems.push_back(shown_path(child_path(parent.shown, claim)) +
                                  " is not the job's user's directory; left in place");
        return;
    }
    remove_tree_on(parent_fd, claim, parent.facts.dev, parent.shown, result, as);
}

// claim: rename dir to this name first, and remove it only if that rename
// found it (remove_tree_within_once).
RemoveResult remove_within(const std::string& root, const std::string& dir, const std::optional<Owner>& as,
                           const std::string& claim = "")
{
    RemoveResult result;
    ParentOfDir parent = open_parent_within(root, dir, "nothing removed", result.problems);
    if (!parent.level)
        return result;
    const int parent_fd = parent.level->fd.get();
    if (!claim.empty()) {
        // Never over an existing entry (plain rename would replace an empty
        // directory, and fail on a full one): a claim of ours already there
        // is what an earlier run of this node's epilog left when its time
        // limit stopped it, or the job was requeued since; finish it first.
        if (::renameat2(parent_fd, parent.leaf.c_str(), parent_fd, claim.c_str(), RENAME_NOREPLACE) == 0) {
            parent.leaf = claim;
        } else {
            const int err = errno;
            if (err != ENOENT && err != EEXIST) {
                result.problems.push_back(cannot("claim", shown_path(dir) + " for removal", err));
                return result;
            }
            finish_claim(parent_fd, claim, *parent.level, *as, result);
            if (err == ENOENT || !result.problems.empty())
                return result;  // ENOENT: another node claimed it, or it is gone
            if (::renameat2(parent_fd, parent.leaf.c_str(), parent_fd, claim.c_str(), RENAME_NOREPLACE) != 0) {
                if (errno != ENOENT)
                    result.problems.push_back(cannot("claim", shown_path(dir) + " for removal", errno));
                return result;
            }
            parent.leaf = claim;
        }
    }
    // dir itself is checked like everything inside (symlink, mount point).
    remove_tree_on(parent_fd, parent.leaf, parent.level->facts.dev, parent.level->shown, result, as);
    return result;
}
}  // namespace

RemoveResult remove_tree_within_once(const std::string& root, const std::string& dir, const Owner& as,
                                     const std::string& claim)
{
    return remove_within(root, dir, as, claim);
}

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
    ParentOfDir parent = open_parent_within(root, dir, "nothing unmounted", result.problems);
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
