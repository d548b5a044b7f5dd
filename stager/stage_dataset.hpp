// Staging one dataset to one tier on every node of the job (one rank per
// node): the job directory the prolog prepared checked and entered, then
// the way of the tier (stager/tiers/stage_in_tier).
#pragma once

#include "config/stage_spec.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {


// Throws Error with the reason (the caller adds dataset, tier and node).
void stage_dataset(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options);

}  // namespace dlstage::stager
