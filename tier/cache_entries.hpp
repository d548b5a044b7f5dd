// A node cache's entries as root sees and manages them: the prolog (which
// records the job's use and evicts before staging), `dlstage gc` and
// `dlstage status --node`.  The entries themselves are the users' (made by
// the stager as the user, job/job_layout.hpp); root trusts nothing in them:
// - which jobs use an entry and when it was last used are root's own
//   records in state_dir/cache/<node>/ (jobs/<job>.toml written by the
//   prolog, removed by the epilog; last-use/<tier>.<uid>.<dataset>, whose
//   mtime the prolog sets);
// - an entry's size is measured, and an entry removed, in a child process
//   that acts as the entry's owner (their effective uid and gid; its real
//   and saved uid stay root's, so the owner cannot stop it with a signal)
//   and ends within a time limit: root never stats into what a user
//   controls, and never removes what the owner could not;
// - everything in a user's cache directory counts as some entry (a name
//   no dataset has is an entry of its own), a file with several links
//   once, and an entry's eviction removes every name of it (the copy, its
//   partial, incoming, image and retired copies, its record and list); a
//   user's cache directory a prolog moved aside (USER.untrusted-STAMP) is
//   an entry of its owner's as a whole, so no byte in the tier escapes;
// - nor does that child enter a mount in a user's cache directory: the
//   mounts come from mountinfo first, and a dataset one of whose names
//   holds a mount (a FUSE server that never answers would hold the child
//   in the kernel past SIGKILL) is reported and left out, neither measured
//   nor evicted.  A mount made after that look can still catch a child; it
//   ends at its time limit holding nothing of root's (lib/sys/bounded.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "config/config.hpp"

namespace dlstage {

// One use of an entry by a job: the entry is (tier, uid, dataset).
struct CacheUse {
    std::string tier;
    std::string user;
    uid_t uid = 0;
    std::string dataset;
};

// The prolog: `job` uses these entries on `node` from now on, and their
// last use is now.  Serialized with other prologs on the node (a lock in
// state_dir/cache/<node>), as eviction is: take CacheLock around both.
void record_cache_use(const std::string& state_dir, const std::string& node, const std::string& job,
                      const std::vector<CacheUse>& uses);
// The epilog (and gc, for a job that ended without one): `job` uses none.
void forget_cache_use(const std::string& state_dir, const std::string& node, const std::string& job);
// The jobs with use records on node, in job id order as text, each with
// when its record was written (root's own file's mtime).
struct CacheUseRecord {
    std::string job;
    std::int64_t written = 0;
};
std::vector<CacheUseRecord> cache_use_records(const std::string& state_dir, const std::string& node);

// Held while a prolog records its use, and while a prolog, an epilog or
// gc reads the uses and evicts, so that no entry a job has recorded its use
// of is evicted.  Measuring goes without it (eviction_generation below).
// Waits at most `seconds` for another holder, then throws Error saying the
// lock is still held (every holder is root's own bounded work: a longer
// wait means something is wrong, and the caller has more to do).
class CacheLock {
public:
    CacheLock(const std::string& state_dir, const std::string& node, double seconds);  // throws Error
    ~CacheLock();
    CacheLock(const CacheLock&) = delete;
    CacheLock& operator=(const CacheLock&) = delete;

private:
    int fd_ = -1;
};

struct NodeCacheEntry {
    std::string user;
    uid_t uid = 0;
    gid_t gid = 0;
    std::string dataset;
    std::uint64_t bytes = 0;  // allocated, of the copy and its files (record, list, partial data)
    std::uint64_t inodes = 0;
    std::uint64_t files = 0;   // files in the copy
    bool ready = true;         // its ready record is there (false: a staging that did not finish)
    std::int64_t changed = 0;  // the newest ctime of anything in it (epoch seconds)
    // A directory a prolog moved aside in the cache parent (USER.untrusted-
    // STAMP: it held a mount, or another uid's): `dataset` is that name, the
    // whole of it one entry of its owner's that no job uses.
    bool aside = false;
    // Not measured in time (bytes, inodes and files 0, ready true: unknown):
    // a dataset the listing named whose turn did not come, or, `unlisted`,
    // all of a user's directory that could not even be listed (`dataset`
    // empty).  Counted by what the tier's file system says is used, and
    // evicted while that says the tier is over (policies/cache_eviction).
    bool measured = true;
    bool unlisted = false;
    std::int64_t last_use = 0;      // root's record; 0: none
    std::vector<std::string> jobs;  // jobs on this node that use it, by root's records
    // Jobs on this node that use any entry of its owner's in this tier, by
    // root's records: one of them may be staging it (gc's rule for an
    // unfinished entry); for an unlisted entry, the datasets they use stay.
    std::vector<std::string> owner_jobs;
    std::set<std::string> owner_datasets;
};

struct FoundCacheEntries {
    std::vector<NodeCacheEntry> entries;  // by user, then dataset
    std::vector<std::string> problems;    // a user's directory that could not be measured, ...
};

// The entries of `tier` (a cache tier) on this node.  Every user's directory
// below <tier root>/.cache is measured as that user (root only; another
// caller measures only their own), each within `each_seconds` and all of
// them within `total_seconds`.  What is not measured in time is still an
// entry, `measured` false: the datasets the child listed but had no time to
// measure, or the whole directory (`unlisted`) when it could not list it
// or its turn came when the time was up; each such directory is a problem
// too.  A directory whose turn came when the time was up, or whose child
// failed, is left out, a problem: said so, measured next time.
FoundCacheEntries find_cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node,
                                     double each_seconds, double total_seconds);

// Which evictions happened on the node: a number that grows with each
// (root's state_dir/cache/<node>/evictions).  Entries are measured without
// the node's cache lock; whoever then evicts compares the number taken
// before measuring with the number under the lock: another's evictions
// since mean the measurement no longer holds.
std::uint64_t eviction_generation(const std::string& state_dir, const std::string& node);
// After an eviction, under the lock.
void count_eviction(const std::string& state_dir, const std::string& node);

// Root's records of the entries (the jobs using them, their last use) read
// again: after the entries were measured without the node's cache lock,
// under the lock before evicting.
void refresh_cache_uses(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                        const std::string& node);

// Removes the entry, as its owner, within `seconds`: the record first (a
// job looking meanwhile sees no copy, never half of one), then the list of
// contents and the copy.  An unlisted entry: every name in its user's
// directory but those of `owner_datasets` (and of a dataset a mount is
// in), ready records first.  Returns the problem, or "".
std::string evict_cache_entry(const Tier& tier, const NodeCacheEntry& entry, double seconds);

// What a job's dataset brings to a cache, as root may believe it: the
// source probed (dataset/source_facts: a stat, a glob of shards or a trusted
// manifest's header) by a child that became the job's user, with their
// groups, within `seconds`; never the sizes the submitting user's own
// process put in the job's environment, which would let anyone make root
// evict other users' entries.  Unknown (a tree without a manifest, a probe
// that failed: `problem`) stays unset.
struct ProbedSource {
    std::optional<std::uint64_t> bytes;
    std::optional<std::uint64_t> files;
    std::string problem;
};
ProbedSource probe_source_as(const Dataset& dataset, const std::string& manifest_dir, const std::string& user,
                             uid_t uid, gid_t gid, double seconds);

// "alice/imagenet": an entry in messages.
std::string entry_name(const NodeCacheEntry& entry);

}  // namespace dlstage
