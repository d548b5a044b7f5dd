// Which tier a --stage-data entry goes to, and may it: the site default,
// the dataset's allowed tiers, paths outside the catalog.  config/stage_spec
// gathers the facts (what was written, what the catalog says) and asks.
#pragma once

#include <string>
#include <vector>

#include "policies/verdict.hpp"

namespace dlstage::policy {

struct TierRequest {
    std::string shown;                       // the dataset as the user wrote it
    std::string requested;                   // the tier after ':', or ""
    bool is_path = false;                    // a path, not a catalog name
    std::string site_default;                // site.default_tier, or ""
    std::vector<std::string> dataset_tiers;  // allowed, in order of preference
    std::vector<std::string> site_tiers;     // every tier, for the message
};

struct TierChoice {
    std::string tier;  // when allowed
    Verdict verdict;
};

// The tier written; else the site default if the dataset allows it; else
// the dataset's first tier.  A path without a tier needs a site default:
// every tier is allowed for it, and none is a better guess than another.
TierChoice choose_tier(const TierRequest& request);

// Is `tier` one of the dataset's allowed tiers?
Verdict tier_allowed(const std::string& dataset, const std::vector<std::string>& dataset_tiers,
                     const std::string& tier);

// A path outside the catalog may be staged where the site allows paths
// (site.allow_paths); every tier is allowed for it.
Verdict path_allowed(bool site_allows_paths, const std::string& path);

}  // namespace dlstage::policy
