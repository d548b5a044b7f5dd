// A node cache's entry removed, as its owner, within its time; never
// through a mount in a user's directory (tier/cache_entry.hpp says why).
#pragma once

#include <string>

#include "config/config.hpp"
#include "tier/cache_entry.hpp"

namespace dlstage {

// Removes the entry, as its owner, within `seconds`: the record first (a
// job looking meanwhile sees no copy, never half of one), then the list of
// contents and the copy.  An unlisted entry: every name in its user's
// directory but those of `owner_datasets` (and of a dataset a mount is
// in), ready records first.  Returns the problem, or "".
std::string evict_cache_entry(const Tier& tier, const NodeCacheEntry& entry, double seconds);

}  // namespace dlstage
