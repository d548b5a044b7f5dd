// What `dlstage status --node` shows of one tier, as this node sees it:
// its file system's size and use, dlstage's byte limit there, what the tier
// root holds and the node cache's entries (both: tier/tier_contents).  Node-local tiers are seen only on the node
// itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "tier/tier_contents.hpp"

namespace dlstage {

struct TierView {
    const Tier* tier = nullptr;
    TierSpace space;
    std::optional<std::uint64_t> byte_limit;
    std::vector<TierEntry> entries;
    std::vector<CacheEntry> cache;
    std::string problem;  // the root could not be looked at
};

// Never throws: a root that cannot be looked at is the view's problem.
TierView look_at_tier(const Tier& tier, const std::string& state_dir, const std::string& node);

// What another node's caches hold, as Slurm's features of it say
// ([locality] node_features; policies/node_features): what anyone may see
// from a login node, as with sinfo -n.
struct FeatureEntryRow {
    std::string dataset;  // of a cut feature, its first part and "..."
    std::string user;     // the uid's name, else the uid
    std::size_t shares = 0;
    std::string feature;
};
struct RemoteNodeView {
    std::vector<FeatureEntryRow> cached;
    std::string problem;  // Slurm did not answer
};
RemoteNodeView look_at_node_features(const Config& config, const std::string& node);

}  // namespace dlstage
