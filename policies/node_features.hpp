// Data locality: what a node's caches hold, said to Slurm as node features
// of dlstage's own (`[locality]`), so that a job may prefer the nodes that
// hold its datasets.  Entries are a user's (node caches are per user), so
// a feature names the dataset and its owner's uid: PREFIX DATASET _u UID,
// a split share PREFIX DATASET _of N _u UID (any share of N; a job on
// the same N nodes gets the same shares).  Every feature that begins with
// the prefix is dlstage's: the site's own never do, and are kept as they
// are.  Pure rules; root's code that reads and sets them is
// tier/cache_features, the submit side's spank/submit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// The longest prefix (16), a cut name's hash (_hXXXXXXXX), a share count
// (_ofN) and a uid (_uUID) fit in this much, with room for a dataset's
// first characters.
inline constexpr int kShortestFeatureMaximum = 56;

// At most this many features of dlstage's on a node, and shares of at
// most this many nodes (Slurm's node count, far more than any job): a
// user's cache directory is theirs to fill with names, and slurmctld's
// node records are not theirs to grow.
inline constexpr std::size_t kMostFeaturesPerNode = 256;
inline constexpr std::size_t kMostShares = 65536;

// 1 to 16 letters, digits or '_', starting with a letter: a prefix Slurm
// reads as part of one feature name.
bool valid_feature_prefix(std::string_view prefix);

// A node cache entry as its feature sees it.
struct CachedEntryFacts {
    std::string dataset;     // the catalog's name
    unsigned long uid = 0;   // its owner
    std::size_t shares = 0;  // a split share of this many; 0: the whole dataset
};

// The entry's feature: at most settings.feature_max_length characters (a
// longer name is cut and ends in a hash of the whole, so two names cut
// alike still differ).
std::string entry_feature(const LocalitySettings& settings, const CachedEntryFacts& entry);

bool is_dlstage_feature(const LocalitySettings& settings, std::string_view feature);

// What a feature of dlstage's says of its entry, read back: the dataset
// (of a cut name, its first part, `cut` set), the owner's uid and the
// shares.  Nothing for a feature not of that form.
struct FeatureEntry {
    CachedEntryFacts entry;
    bool cut = false;
};
std::optional<FeatureEntry> entry_of_feature(const LocalitySettings& settings, std::string_view feature);

// Whether a whole entry still attracts jobs (gc keeps its feature): its
// source, as a cheap look tells, has not changed since the copy was last
// known to match it.  No entry is ever used stale (the stager checks
// every use, cache_reuse); this keeps jobs from being steered to a copy
// the next job would stage again.  The look is a few stats, never a walk:
// a source's files' (a shard set's), or a tree's root and its manifest's
// scan.  A file rewritten deep in a tree without a manifest is not seen
// here (the next job there stages it again, and its feature comes back).
struct EntrySourceLook {
    bool record_read = false;           // the entry's ready record could be read
    bool same_source = false;           // its source is the catalog's source now
    bool looked = false;                // the source could be looked at here (not a two-hop dataset's)
    bool present = false;               // ... and is there, readable
    std::int64_t known_current = 0;     // when the copy was last known to match it: made, or its last hit
    std::int64_t newest_ctime = 0;      // the newest ctime of what the look saw (epoch s)
    std::int64_t manifest_scanned = 0;  // a tree's manifest's scan time (0: none)
};
// Refused, the reason: "its source changed since it was cached here", ...
Verdict entry_attracts(const EntrySourceLook& look);

// What a root part knows of dlstage's features on its node: all of them
// (gc, after measuring every cache tier: `Replace`), entries found whole
// (the epilog: `Add`), or entries evicted (`Remove`).
enum class FeatureChange { Replace, Add, Remove };

// dlstage's features after the change.
std::set<std::string> features_after(const std::set<std::string>& ours_now, const std::set<std::string>& named,
                                     FeatureChange change);

// A node's feature list (slurmctld's, comma-separated parts) with
// dlstage's set to `ours`: the site's first, as they were, then ours in
// order.
std::vector<std::string> node_features_with(const std::vector<std::string>& current, const std::set<std::string>& ours,
                                            const LocalitySettings& settings);

// dlstage's features in a node's list.
std::set<std::string> dlstage_features_of(const std::vector<std::string>& current, const LocalitySettings& settings);

// What submit knows for a job's preference: the features of its
// node-cached datasets (in the request's order), the nodes of its
// partitions, how many nodes it asks for (0: unknown), and the job's own
// --prefer.
struct NodeHolding {
    std::set<std::string> features;  // active
    bool may_take_jobs = true;       // policies/slurm_states slurm_node_may_take_jobs
};
struct PreferenceFacts {
    std::vector<std::string> wanted;
    std::vector<NodeHolding> nodes;
    std::size_t nodes_asked = 0;
    std::string users_prefer;  // "": none
};

// The --prefer dlstage adds ("": none) and why, in one line.  Never a
// preference Slurm 22.05 would hold the job on or refuse: only features
// that as many nodes of the job's partitions as it asks for hold and that
// may take jobs (a preferred feature on drained nodes alone makes Slurm
// wait for them, one no node of the partition has refuses the job), and
// only when the job asks for a known number of nodes.  Several datasets:
// all of them where enough nodes hold all, else the first one held.  The
// job's own --prefer is kept, and nothing is added to it.
struct Preference {
    std::string prefer;
    std::string why;
};
Preference job_preference(const PreferenceFacts& facts);

// A feature list in a pending job's --prefer that dlstage set: every one
// of its '&'-joined parts dlstage's.  gc clears such a preference from a
// job Slurm holds for it (a node drained or an entry gone since submit).
bool prefer_is_dlstages(const LocalitySettings& settings, std::string_view prefer);

}  // namespace dlstage::policy
