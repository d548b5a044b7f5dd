#include "stager/tiers/stage_in_tier.hpp"

#include "stager/tiers/cache_tier.hpp"
#include "stager/tiers/node_tier.hpp"
#include "stager/tiers/shared_tier.hpp"

namespace dlstage::stager {

void stage_in_tier(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                   const DatasetLayout& layout, const Fd& job_dir)
{
    if (item.tier.shared())
        stage_shared(item, ctx, options, layout, job_dir);
    else if (item.tier.node_cache())
        stage_cached(item, ctx, options, layout, job_dir);
    else
        stage_node_tier(item, ctx, options, layout, job_dir);
}

}  // namespace dlstage::stager
