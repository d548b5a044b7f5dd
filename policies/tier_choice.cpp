#include "policies/tier_choice.hpp"

#include <algorithm>

#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
bool contains(const std::vector<std::string>& names, const std::string& name)
{
    return std::find(names.begin(), names.end(), name) != names.end();
}
}  // namespace

TierChoice choose_tier(const TierRequest& request)
{
    if (!request.requested.empty())
        return {request.requested, Verdict::allow()};
    if (!request.site_default.empty() && contains(request.dataset_tiers, request.site_default))
        return {request.site_default, Verdict::allow()};
    if ((request.is_path && request.site_default.empty()) || request.dataset_tiers.empty())
        return {"",
                Verdict::refuse("no tier given for " + quoted(request.shown) + " and no site default: write it as " +
                                request.shown + ":TIER (tiers: " + join(request.site_tiers, ", ") + ")")};
    return {request.dataset_tiers.front(), Verdict::allow()};
}

Verdict tier_allowed(const std::string& dataset, const std::vector<std::string>& dataset_tiers, const std::string& tier)
{
    if (contains(dataset_tiers, tier))
        return Verdict::allow();
    return Verdict::refuse("tier " + quoted(tier) + " is not allowed for dataset " + quoted(dataset) +
                           " (allowed: " + join(dataset_tiers, ", ") + ")");
}

Verdict path_allowed(bool site_allows_paths, const std::string& path)
{
    if (site_allows_paths)
        return Verdict::allow();
    return Verdict::refuse("staging paths outside the catalog is disabled on this cluster: " + quoted(path) +
                           "; use a dataset from 'dlstage catalog list'");
}

}  // namespace dlstage::policy
