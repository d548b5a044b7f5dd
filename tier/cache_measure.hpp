// A node cache's entries measured, each user's as that user, by a child
// that ends within its time (tier/cache_entry.hpp says why), with root's
// records of their use (tier/cache_records.hpp).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "tier/cache_entry.hpp"

namespace dlstage {

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

}  // namespace dlstage
