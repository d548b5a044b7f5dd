// What a tier holds on this node, for `dlstage status --node`: the entries
// of the tier root (job directories, users' directories) with their
// owners, and the entries of node caches.  Read-only and
// safe as root: the root is reached as tier/safe_fs.hpp reaches it, entries
// are looked at with a stat no file system server can block, never
// followed and never entered.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "config/config.hpp"
#include "tier/tier_measure.hpp"

namespace dlstage {

struct TierEntry {
    std::string name;  // shown with printable(): users choose names too
    uid_t uid = 0;
    std::string owner;     // user name, or the uid as digits
    std::string kind;      // "directory", "file", "symlink", "other"
    bool mounted = false;  // something is mounted on it (never entered)
};

struct TierContents {
    bool exists = false;             // the tier root is there (the prolog makes it)
    TierSpace space;                 // its file system, when it exists
    std::vector<TierEntry> entries;  // by name
};

// The tier root's file system and entries.  Throws Error with the problem
// when the root is not trustworthy (not root's, a symlink, ...).
TierContents tier_contents(const std::string& root);

struct CacheEntry {
    std::string dataset;
    std::uint64_t bytes = 0;
    std::uint64_t files = 0;
    std::int64_t last_use = 0;       // root's record; 0: none
    std::vector<std::string> users;  // whose entry it is (entries are per user)
    std::vector<std::string> jobs;   // jobs on this node using it now
};

// The node cache's entries in this tier (cleanup = "cache"; none for other
// tiers), found and measured as tier/cache_measure.hpp does: root sees every
// user's, a user their own.
std::vector<CacheEntry> cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node);

}  // namespace dlstage
