#include "policies/tier_settings.hpp"

namespace dlstage::policy {

Verdict placement_fits_kind(const Tier& tier)
{
    if (tier.placement == Placement::Split && tier.shared())
        return Verdict::refuse("a shared tier holds one copy every node reads: only a node tier splits datasets");
    return Verdict::allow();
}

Verdict purge_fits_kind(const Tier& tier)
{
    if (!tier.shared())
        return Verdict::refuse("purge_days, purge_by, warn_days and refresh_on_use are for scope = \"shared\" "
                               "tiers (a file system the site purges)");
    return Verdict::allow();
}

Verdict watermarks_fit_kind(const Tier& tier)
{
    if (tier.cleanup != Cleanup::Cache)
        return Verdict::refuse(
            "high_watermark and low_watermark are for cleanup = \"cache\" tiers (what evicts entries)");
    return Verdict::allow();
}

Verdict charge_memory_fits_kind(const Tier& tier)
{
    if (tier.shared() && tier.charge_memory.value_or(false))
        return Verdict::refuse("a shared tier is not in node memory: charge_memory is for node tiers");
    return Verdict::allow();
}

std::vector<KeyProblem> path_fits_kind(const Tier& tier)
{
    std::vector<KeyProblem> problems;
    const auto problem = [&problems](const char* key, const char* message) { problems.push_back({key, message}); };
    if (tier.node_cache() && !tier.path.uses('j'))
        problem("path", "cleanup = \"cache\" needs %j in the path: the job's directory holds its markers, the cache "
                        "keeps its entries in <tier root>/.cache");
    if (tier.gone_at_job_end() && !tier.path.uses('j'))
        problem("path", "cleanup = \"job-end\" needs %j in the path, or two jobs would share (and delete) "
                        "one directory");
    if (!tier.shared())
        return problems;
    // One copy for all nodes of a job, in a directory the prolog gives to
    // one user: per user (%u) and kept for reuse, or per job (%j) and gone
    // with it.  Anything else would hand one user's copy to another.
    if (tier.path.uses('n'))
        problem("path", "scope = \"shared\" means one copy for all nodes: drop %n");
    if (tier.cleanup == Cleanup::Cache)
        problem("cleanup", "cleanup = \"cache\" is for node tiers; a shared tier keeps its copies with \"keep\"");
    if (tier.keeps_copies() && !tier.path.uses('u'))
        problem("path", "a kept shared copy is per user: put %u in the path (e.g. \"/p/scratch/dlstage/%u\")");
    if (tier.keeps_copies() && tier.path.uses('j'))
        problem("path", "a kept shared copy is found again by the user's later jobs: drop %j");
    return problems;
}

}  // namespace dlstage::policy
