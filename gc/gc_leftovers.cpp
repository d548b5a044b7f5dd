#include "gc/gc_leftovers.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/job_records.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

namespace {
constexpr const char* kClaimWord = ".removing-";

std::string child_of(const std::string& dir, const std::string& name)
{
    return dir == "/" ? "/" + name : dir + "/" + name;
}

// Where the kernel has the tier root (mountinfo's names), through the
// admin's symlinks above it; "" when it cannot tell.
std::string real_path(const std::string& path)
{
    char buf[PATH_MAX];
    return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// In job id order ("9" before "10"), as `dlstage status` lists jobs.
Found in_job_order(Found found)
{
    std::stable_sort(found.leftovers.begin(), found.leftovers.end(),
                     [](const Leftover& a, const Leftover& b) { return job_id_less(a.job_id, b.job_id); });
    return found;
}

bool exists(const std::string& path)
{
    QuickStat f;
    return quick_stat(AT_FDCWD, path.c_str(), 0, f) || errno != ENOENT;
}

// The names in a trusted directory (root's, writable by root only), or a
// line saying why it is skipped.
std::vector<std::string> list_trusted(const std::string& root, const std::string& dir, const std::string& label,
                                      std::vector<std::string>& skipped, Fd* keep = nullptr)
{
    std::vector<std::string> names;
    const OpenResult opened = open_trusted_dir(root, dir, false);
    if (!opened.problem.empty()) {
        skipped.push_back(label + " skipped: " + opened.problem);
        return names;
    }
    Fd reading = reopen_for_reading(opened.dir);
    DirStream entries(reading.get());
    if (!reading.valid() || !entries.valid()) {
        skipped.push_back(label + " skipped: " + cannot("list", shown_path(dir), errno));
        return names;
    }
    while (const dirent* e = entries.next())
        names.emplace_back(e->d_name);
    if (entries.error() != 0)
        skipped.push_back(label + ": " + cannot("list", shown_path(dir), entries.error()) + "; seen only in part");
    std::sort(names.begin(), names.end());
    if (keep)
        *keep = std::move(reading);
    return names;
}

// The job (and the job directory's name) a last-level entry is, if any.
bool job_entry(const Tier& tier, const std::string& pattern, const std::string& name, const std::string& node,
               Leftover& out)
{
    if (match_level(pattern, name, node, &out.job_id)) {
        out.kind = policy::GcKind::JobDir;
        out.job_name = name;
        return true;
    }
    const std::size_t claim = name.rfind(kClaimWord);
    if (!tier.shared() || claim == std::string::npos || claim + std::strlen(kClaimWord) == name.size())
        return false;
    out.kind = policy::GcKind::Claim;
    out.job_name = name.substr(0, claim);
    return match_level(pattern, out.job_name, node, &out.job_id);
}

struct TierScan {
    const Tier& tier;
    const std::string& node;
    std::vector<std::string> levels;
    std::string real_root;
    MountTable mounts;
    Found found;

    void level(std::size_t depth, const std::string& dir, const std::string& real_dir)
    {
        Fd reading;
        const std::string label = "tier " + quoted(tier.name);
        const std::vector<std::string> names = list_trusted(tier.path.root(), dir, label, found.skipped, &reading);
        const bool last = depth + 1 == levels.size();
        for (const std::string& name : names) {
            const std::string path = child_of(dir, name);
            const std::string real = real_dir.empty() ? "" : child_of(real_dir, name);
            if (!last) {
                if (match_level(levels[depth], name, node, nullptr))
                    level(depth + 1, path, real);
                continue;
            }
            Leftover l;
            if (!job_entry(tier, levels[depth], name, node, l))
                continue;
            l.where = tier.name;
            l.root = tier.path.root();
            l.path = path;
            l.shared = tier.shared();
            // mountinfo first: the stat of a mount point is the mount's.
            l.mounted = real.empty() || mounts.at(real).has_value();
            QuickStat f;
            if (!quick_stat(reading.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, f))
                continue;  // gone meanwhile
            if (!l.mounted && !S_ISDIR(f.mode)) {
                found.skipped.push_back(shown_path(path) + " is not a directory; left in place");
                continue;
            }
            l.changed = std::max<std::int64_t>(f.mtime, f.ctime);
            found.leftovers.push_back(std::move(l));
        }
    }
};
}  // namespace

Found find_tier_leftovers(const Tier& tier, const std::string& node)
{
    TierScan scan{tier, node, tier.path.levels(), real_path(tier.path.root()), MountTable::current(), {}};
    if (scan.levels.empty() || !exists(tier.path.root()))
        return {};
    scan.level(0, tier.path.root(), scan.real_root);
    return in_job_order(std::move(scan.found));
}

Found find_job_records(const std::string& state_dir)
{
    Found found;
    const std::string jobs = jobs_dir(state_dir);
    if (!exists(jobs))
        return found;
    Fd reading;
    for (const std::string& name : list_trusted(state_dir, jobs, "state_dir", found.skipped, &reading)) {
        // JOB, or JOB.removing-NODE: a claim gc on NODE did not finish.
        const std::string job = name.substr(0, name.rfind(kClaimWord));
        QuickStat f;
        if (!is_job_id(job) || !quick_stat(reading.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, f) || !S_ISDIR(f.mode))
            continue;
        Leftover l;
        const bool claimed = job != name;
        l.kind = claimed ? policy::GcKind::Claim : policy::GcKind::Records;
        l.where = kRecordsPlace;
        l.root = state_dir;
        l.path = child_of(jobs, name);
        l.job_id = job;
        l.job_name = job;
        // Root's directory: its mtime is the last record root wrote (the
        // epilog's, at job end); users cannot set it.  A claim's ctime is
        // when it was claimed.
        l.changed = claimed ? std::max<std::int64_t>(f.mtime, f.ctime) : f.mtime;
        found.leftovers.push_back(std::move(l));
    }
    return in_job_order(std::move(found));
}

namespace {
void add(RemoveResult& into, RemoveResult&& more)
{
    into.removed += more.removed;
    for (std::string& problem : more.problems)
        into.problems.push_back(std::move(problem));
}

// The job's user directory as its owner, then root's records as root:
// root never removes what the user could not.
RemoveResult remove_records_at(const std::string& state_dir, const std::string& dir)
{
    RemoveResult result;
    QuickStat user;
    const OpenResult job_dir = open_trusted_dir(state_dir, dir, false);
    if (!job_dir.problem.empty()) {
        result.problems.push_back(job_dir.problem + "; nothing removed");
        return result;
    }
    if (quick_stat(job_dir.dir.get(), kUserDir, AT_SYMLINK_NOFOLLOW, user) && S_ISDIR(user.mode)) {
        add(result, remove_tree_within(state_dir, child_of(dir, kUserDir), Owner{user.uid, user.gid}));
        if (!result.ok())
            return result;
    }
    add(result, remove_tree_within(state_dir, dir));
    return result;
}

// A job's records, in a state_dir every node's gc may look at: renamed to
// this node's claim first (JOB.removing-NODE), so that only one gc removes
// them; this node's own claim left by an earlier run is finished first.
RemoveResult remove_records(const Leftover& l, int jobs_fd, const std::string& leaf, const std::string& node)
{
    const std::string jobs = split_parent(l.path).first;
    const std::string claim = l.job_name + kClaimWord + node;
    if (leaf == claim)
        return remove_records_at(l.root, l.path);
    RemoveResult result;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (::renameat2(jobs_fd, leaf.c_str(), jobs_fd, claim.c_str(), RENAME_NOREPLACE) == 0) {
            add(result, remove_records_at(l.root, child_of(jobs, claim)));
            return result;
        }
        if (errno == ENOENT)
            return result;  // another node's gc claimed them
        if (errno != EEXIST || attempt > 0) {
            result.problems.push_back(cannot("claim", shown_path(l.path) + " for removal", errno));
            return result;
        }
        add(result, remove_records_at(l.root, child_of(jobs, claim)));
        if (!result.ok())
            return result;
    }
    return result;
}
}  // namespace

RemoveResult remove_leftover(const Leftover& l, const std::string& node)
{
    RemoveResult result;
    DetachResult detached = detach_mounts_within(l.root, l.path);
    if (!detached.problems.empty()) {
        result.problems = std::move(detached.problems);
        return result;
    }
    // Its owner, looked at again now that nothing is mounted on it: a
    // mount's root may claim any owner.
    const auto [parent, leaf] = split_parent(l.path);
    const OpenResult held = open_trusted_dir(l.root, parent, false);
    if (!held.problem.empty()) {
        result.problems.push_back(held.problem + "; nothing removed");
        return result;
    }
    QuickStat f;
    if (!quick_stat(held.dir.get(), leaf.c_str(), AT_SYMLINK_NOFOLLOW, f)) {
        if (errno != ENOENT)
            result.problems.push_back(cannot("examine", shown_path(l.path), errno) + "; nothing removed");
        return result;  // ENOENT: removed meanwhile (a late epilog, gc on another node)
    }
    if (!S_ISDIR(f.mode)) {
        result.problems.push_back(shown_path(l.path) + " is not a directory; left in place");
        return result;
    }
    if (l.where == kRecordsPlace)
        return remove_records(l, held.dir.get(), leaf, node);
    const Owner owner{f.uid, f.gid};
    if (!l.shared)
        return remove_tree_within(l.root, l.path, owner);
    const std::string claim = l.job_name + kClaimWord + node;
    if (leaf == claim)  // this node's own claim: nobody else removes it
        return remove_tree_within(l.root, l.path, owner);
    return remove_tree_within_once(l.root, l.path, owner, claim);
}

}  // namespace dlstage
