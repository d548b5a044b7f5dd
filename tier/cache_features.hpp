// dlstage's node features ([locality] node_features, policies/node_features)
// kept to what this node's caches hold, by root's parts that already know:
// the epilog adds its job's entries once they are whole, an eviction (the
// prolog's, the epilog's, gc's) removes the entry's, and gc, having
// measured every cache tier, sets them all (a slurmctld restart or
// reconfigure loses features set at run time: gc puts them back within
// its period).  Each change asks slurmctld only when root's record of what
// it last set (tier/cache_records) says it changes something, and sets the
// node's lists only when dlstage's part of them changes: a busy node sends
// an update when an entry comes or goes, not per job.  The site's own
// features are kept as they are.
#pragma once

#include <set>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "policies/node_features.hpp"
#include "tier/cache_entry.hpp"

namespace dlstage {

// The feature of an entry `entry` (a dataset's name, or a split share's)
// of the user `uid`, when it names a catalog dataset; "" otherwise (an
// absolute path staged, a name no dataset has: no feature).
std::string cache_entry_feature(const Config& config, uid_t uid, const std::string& entry);

// The features of the entries measuring found whole, their owner's own
// and of catalog datasets; a moved-aside or unlisted directory has none.
std::set<std::string> whole_entry_features(const Config& config, const std::vector<NodeCacheEntry>& entries);

// Of `entries` in `user`'s cache directory of `tier`, those with their
// ready record (whole), looked at by a child acting as the user within
// `seconds` (root never looks into a user's directory itself); none when
// it could not tell.
std::vector<std::string> whole_entries_of(const Tier& tier, const NodeCacheEntry& owner,
                                          const std::vector<std::string>& entries, double seconds);

// Of `entries` (whole) in `owner`'s cache directory of `tier`, those that
// still attract jobs and those whose source changed since they were cached
// (policies/node_features entry_attracts), looked at by a child acting as
// the user within `seconds`: each ready record read, its source's times
// looked at (dataset/source_probe source_times).  `told` false when it
// could not tell: then every entry is kept as it was.
struct EntryAttraction {
    std::vector<std::string> attracting;
    std::vector<std::pair<std::string, std::string>> refused;  // entry, why (policies/node_features)
    bool told = false;
};
EntryAttraction attraction_of(const Config& config, const Tier& tier, const NodeCacheEntry& owner,
                              const std::vector<std::string>& entries, double seconds);

// Changes dlstage's features of `node` within `seconds` (each Slurm
// command bounded by what is left; none started under a second): "" when
// done (or nothing to do, or [locality] is off), else the problem in one
// line.
std::string change_node_features(const Config& config, const std::string& node, const std::set<std::string>& named,
                                 policy::FeatureChange change, double seconds);

// Pending jobs Slurm holds for a --prefer that is dlstage's alone
// (policies/node_features prefer_is_dlstages; the reason:
// policies/slurm_states slurm_reason_is_unmet_features) lose it, within
// `seconds`: Slurm 22.05 holds a job whose preferred features only nodes
// that cannot take jobs have (or none has) instead of running it
// elsewhere.  gc's, root only.  The number released, or the problem.
struct ReleasedJobs {
    std::size_t released = 0;
    std::string problem;
};
ReleasedJobs release_held_jobs(const Config& config, double seconds);

}  // namespace dlstage
