#include "tier/cache_evict.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>
#include <unistd.h>

#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "tier/safe_fs.hpp"
#include "tier/tier_walk.hpp"

namespace dlstage {

using namespace cache_detail;

namespace {
// The cache parent and the mounts in its directory `name` (shown as
// `dir`) as mountinfo lists them now, before removing anything there; or
// why not (`problem`: the parent gone, or mountinfo unreadable).
struct MountsNow {
    CacheUsers users;
    MountsInCache mounted;
    std::string problem;
};

MountsNow mounts_now(const Tier& tier, const std::string& name, const std::string& dir)
{
    MountsNow now;
    std::vector<std::string> problems;
    now.users = cache_users(tier, problems);
    if (now.users.real_parent.empty()) {
        now.problem = problems.empty() ? dir + ": not found" : problems.front();
        return now;
    }
    try {
        now.mounted = mounts_in(MountTable::current(), now.users.real_parent + "/" + name, dir);
    } catch (const Error& e) {
        now.problem = std::string(e.what()) + ": not evicted (a mount in it could hang the removal)";
    }
    return now;
}

// Why nothing may be removed from `dir`, the cache parent's directory
// `name` (a user's, or an aside), for `dataset` (nullptr: for anything in
// it): a mount on it or on what is to go, made since it was measured, or
// the cache parent gone; "" when removing may go on.
std::string mounted_in_the_way(const Tier& tier, const std::string& name, const std::string& dir,
                               const std::string* dataset)
{
    const MountsNow now = mounts_now(tier, name, dir);
    if (!now.problem.empty())
        return now.problem;
    if (now.mounted.whole)
        return *now.mounted.whole;
    if (!dataset && !now.mounted.datasets.empty())
        return now.mounted.datasets.begin()->second;
    if (const auto it = dataset ? now.mounted.datasets.find(*dataset) : now.mounted.datasets.end();
        it != now.mounted.datasets.end())
        return it->second;
    return "";
}

// In a child acting as the owner: `name` in their directory `dir` (open
// as `at`), a file or a whole tree; gone already is fine.  Throws Error.
void remove_name(int at, const std::string& dir, const std::string& name)
{
    if (::unlinkat(at, name.c_str(), 0) == 0 || errno == ENOENT)
        return;
    if (errno != EISDIR)
        throw_cannot("remove", dir + "/" + name, errno);
    const RemoveResult removed = remove_tree_at(at, name, dir);
    if (!removed.ok())
        throw Error(removed.problems.front());
}

// Everything below the aside goes as its owner (setfsuid), the emptied
// directory, in root's cache parent, as root: as the epilog removes a job
// directory (tier/safe_fs).
std::string evict_aside(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    const std::string dir = cache_parent_of(tier) + "/" + entry.dataset;
    if (std::string why = mounted_in_the_way(tier, entry.dataset, dir, nullptr); !why.empty())
        return why;
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        const RemoveResult removed = remove_tree_within(tier.path.root(), dir, Owner{entry.uid, entry.gid});
        if (!removed.ok())
            throw Error(removed.problems.front());
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}

// A user's directory that could not be listed in time: everything in it
// goes, as its owner, but the datasets their jobs here use and those a
// mount is in; each name as it is read (the listing is what was slow),
// its dataset's ready record first, so that no job looking meanwhile takes
// a copy being removed for a whole one.  What is left when the time is up
// goes next time.  When its owner has no job here, the directory is first
// renamed aside in root's cache parent (no listing needed, however many
// names it holds) and removed from there as its time allows; an aside
// left goes as asides do.
std::string evict_unlisted(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const auto left = [until] {
        return std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    };
    const std::string dir = cache_dir_of(tier, entry.user);
    std::set<std::string> kept = entry.owner_datasets();
    {
        const MountsNow now = mounts_now(tier, entry.user, dir);
        if (!now.problem.empty())
            return now.problem;
        if (now.mounted.whole)
            return *now.mounted.whole;
        for (const auto& [dataset, why] : now.mounted.datasets)
            kept.insert(dataset);
        const CacheUsers& users = now.users;
        if (kept.empty()) {
            NodeCacheEntry aside = entry;
            aside.unlisted = false;
            aside.aside = true;
            const std::string stamp = utc_stamp(std::time(nullptr));
            int err = EEXIST;
            for (int n = 0; n < 100 && err == EEXIST; ++n) {
                aside.dataset = tier_walk::aside_name(entry.user, stamp, n);
                err = ::renameat2(users.parent.get(), entry.user.c_str(), users.parent.get(), aside.dataset.c_str(),
                                  RENAME_NOREPLACE) == 0
                          ? 0
                          : errno;
            }
            if (err != 0)
                return cannot("move aside", dir, err);
            return left() < 0.5 ? "" : evict_aside(tier, aside, left());
        }
    }
    if (left() < 0.5)
        return dir + ": no time left to evict";
    const BoundedOutcome outcome = run_bounded(left(), [&] {
        act_as(entry.uid, entry.gid);
        OpenResult opened = open_job_dir(tier.path.root(), dir);
        if (!opened.problem.empty())
            throw Error(opened.problem);
        const Fd reading = reopen_for_reading(opened.dir);
        DirStream stream(reading.get());
        while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
            const std::string name = e->d_name;
            const std::string dataset = dataset_of(name);
            if (dataset.empty() || kept.count(dataset))
                continue;
            remove_name(opened.dir.get(), dir, kReadyPrefix + dataset + kRecordSuffix);
            remove_name(opened.dir.get(), dir, name);
        }
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}
}  // namespace

std::string evict_cache_entry(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    if (entry.aside)
        return evict_aside(tier, entry, seconds);
    if (entry.unlisted)
        return evict_unlisted(tier, entry, seconds);
    const std::string dir = cache_dir_of(tier, entry.user);
    // A mount made since the entry was measured: left alone as well.
    if (std::string why = mounted_in_the_way(tier, entry.user, dir, &entry.dataset); !why.empty())
        return why;
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        act_as(entry.uid, entry.gid);
        OpenResult opened = open_job_dir(tier.path.root(), dir);
        if (!opened.problem.empty())
            throw Error(opened.problem);
        // Its ready record first, so that no job looking meanwhile takes
        // a copy being removed for a whole one; then every name measuring
        // counted as the entry's (the one rule, dataset_of): those
        // dlstage gives it, or, when measuring found others, every name
        // the directory's listing gives it.
        const std::string& name = entry.dataset;
        remove_name(opened.dir.get(), dir, kReadyPrefix + name + kRecordSuffix);
        std::vector<std::string> names = derived_names(name);
        if (!entry.names_derived) {
            names.clear();
            const Fd reading = reopen_for_reading(opened.dir);
            DirStream stream(reading.get());
            while (const dirent* e = stream.valid() ? stream.next() : nullptr)
                if (dataset_of(e->d_name) == name)
                    names.push_back(e->d_name);
        }
        for (const std::string& each : names)
            remove_name(opened.dir.get(), dir, each);
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}

}  // namespace dlstage
