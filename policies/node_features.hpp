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
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "facts/config_model.hpp"

namespace dlstage::policy {

// A prefix, a dataset of the longest name and a uid fit in this much.
inline constexpr int kShortestFeatureMaximum = 24;

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

}  // namespace dlstage::policy
