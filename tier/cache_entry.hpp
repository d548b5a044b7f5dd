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
// One file per concern: an entry, its names and acting as its owner (here),
// root's use records and the node's cache lock (tier/cache_records),
// measuring (tier/cache_measure), evicting (tier/cache_evict).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "config/config.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/mount_table.hpp"

namespace dlstage {

// Root's records of one owner's jobs using a tier on this node: the jobs
// and the datasets they use.  One copy per owner, shared by all their
// entries: a user's million names must not make a million copies.
struct OwnerUses {
    std::vector<std::string> jobs;
    std::set<std::string> datasets;
};

struct NodeCacheEntry {
    std::string user;
    uid_t uid = 0;
    gid_t gid = 0;
    std::string dataset;
    std::uint64_t bytes = 0;  // allocated, of the copy and its files (record, list, partial data)
    std::uint64_t inodes = 0;
    std::uint64_t files = 0;  // files in the copy
    bool ready = true;        // its ready record is there (false: a staging that did not finish)
    // Measuring found only names of derived_names: evicting it needs no
    // listing of its owner's directory.
    bool names_derived = false;
    std::int64_t changed = 0;  // the newest ctime of anything in it (epoch seconds)
    // A directory a prolog moved aside in the cache parent (USER.untrusted-
    // STAMP: it held a mount, or another uid's): `dataset` is that name, the
    // whole of it one entry of its owner's that no job uses.
    bool aside = false;
    // Not measured in time (bytes, inodes and files 0, ready true: unknown):
    // a dataset the listing named whose turn did not come, or, `unlisted`,
    // all of a user's directory that could not even be listed (`dataset`
    // empty).  Counted at its recorded size, or by what a file system of the
    // tier's own says is used (policies/cache_eviction).  `unlisted` and
    // measured: a directory of too many names to list, all of it one entry.
    bool measured = true;
    bool unlisted = false;
    // Not measured whole now, but bytes, inodes and files are known at
    // least: what the measuring child counted before its time ran out, or
    // root's record of its last measurement (tier/cache_records), whichever
    // is more.  Counted at that.
    bool recorded = false;
    std::int64_t last_use = 0;      // root's record; 0: none
    std::vector<std::string> jobs;  // jobs on this node that use it, by root's records
    // Jobs on this node that use any entry of its owner's in this tier, by
    // root's records: one of them may be staging it (gc's rule for an
    // unfinished entry); for an unlisted entry, the datasets they use stay.
    // Shared with the owner's other entries; none: no such job.
    std::shared_ptr<const OwnerUses> owner_uses;

    const std::vector<std::string>& owner_jobs() const;
    const std::set<std::string>& owner_datasets() const;
};

// An entry of `user` (uid, gid): of `dataset`, or, without one, the owner
// a measurement starts from.
NodeCacheEntry entry_owned_by(const std::string& user, uid_t uid, gid_t gid, const std::string& dataset = "");

// "alice/imagenet": an entry in messages.
std::string entry_name(const NodeCacheEntry& entry);

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

// What tier/'s cache files share (cache_measure, cache_evict), for their
// use alone: which entry a name is, acting as an owner (in a bounded child
// only), the cache parent's users and the mounts in their directories.
namespace cache_detail {

// The entry a name in a user's cache directory belongs to: "imagenet" for
// imagenet/, .ready-imagenet.toml, .contents-imagenet, .partial-imagenet,
// .retired-imagenet-JOB, ..imagenet.tmp.PID.X, ...; the name itself for
// any other name, one with an empty dataset part too (".ready-",
// "...tmp.x"); "" only for "." and "..".  Measuring sums, and evicting
// removes, every name of an entry by this one rule.
std::string dataset_of(const std::string& name);

// The names dlstage gives an entry's parts, all of which dataset_of gives
// to it: the copy itself, its ready, staged and resume records (with and
// without their suffix), partial, incoming, image, contents and lock.  An
// eviction removes them without listing the directory when measuring
// found no other name of the entry (a record being replaced, a retired
// copy): a directory of a million names is not listed once per entry.
std::vector<std::string> derived_names(const std::string& dataset);

// In a child about to act for `uid`: that user's identity for the file
// system (effective uid and gid; with `user`, also their supplementary
// groups, to read a source that is theirs through a group).  The real and
// saved uid stay root's: the user may not signal the child (a SIGSTOP
// would hold it, and the lock its parent holds, to its time limit), and
// FUSE refuses it a mount of theirs without allow_other at once.
void act_as(uid_t uid, gid_t gid, const std::string& user = "");

// The users with a directory below <root>/.cache: names only, read as
// root from the root-owned level (nothing in a user's directory is looked
// at), and where the kernel has that level, to find mounts below it.
struct CacheUsers {
    std::vector<std::string> names;
    std::vector<std::string> asides;  // NAME.untrusted-STAMP: what a prolog moved aside (tier/tier_walk)
    std::string real_parent;
    Fd parent;  // the cache parent (O_PATH)
};

CacheUsers cache_users(const Tier& tier, std::vector<std::string>& problems);

// One owner's share of the measuring time: their cache directory (when
// they have one) and the asides a prolog made of it (USER.untrusted-STAMP:
// their name comes first, and the cache parent is root's, so no user can
// name one for another).  An owner's asides cost their own time, never
// another user's: once every aside was a share of its own, and a user
// minting them left others' directories unmeasured.
struct MeasuringSlot {
    std::string owner;
    bool has_directory = false;
    std::vector<std::string> asides;
};

// The order in which a measuring child takes a directory's datasets: those
// never measured whole (not in `measured_at`) first, then those measured
// longest ago, ties by name.  One a user keeps slow to measure then costs
// its own turn, not every later one's, every time.
std::vector<std::string> measuring_order(std::vector<std::string> datasets,
                                         const std::map<std::string, std::uint64_t>& measured_at);

// The slots of a cache parent's names and asides, by owner, in name order.
std::vector<MeasuringSlot> measuring_slots(const std::vector<std::string>& names,
                                           const std::vector<std::string>& asides);

// The mounts in one user's cache directory, as mountinfo lists them: the
// directory itself may be one (`whole`), else the datasets whose names
// hold one are left alone, neither measured nor evicted, each with a line
// saying why.  Nothing here asks the file system.
struct MountsInCache {
    std::optional<std::string> whole;
    std::map<std::string, std::string> datasets;  // the line saying why, by dataset

    std::set<std::string> names() const
    {
        std::set<std::string> out;
        for (const auto& [dataset, why] : datasets)
            out.insert(dataset);
        return out;
    }
};

// Those of `dir` (shown as it is configured), whose real path is `real_dir`.
MountsInCache mounts_in(const MountTable& mounts, const std::string& real_dir, const std::string& dir);

}  // namespace cache_detail

}  // namespace dlstage
