// Which way of staging each kind of tier takes: the one place that says
// it.  A new kind of tier adds its way beside the others in stager/tiers/
// and its line here; what it is, facts/config_model's Tier answers.
#pragma once

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {

// In the job directory the prolog made (the working directory, `job_dir`);
// throws Error with the reason.
void stage_in_tier(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                   const DatasetLayout& layout, const Fd& job_dir);

}  // namespace dlstage::stager
