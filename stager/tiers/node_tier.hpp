// Staging to a node tier whose copy goes at job end: every rank receives
// every chunk and writes the whole dataset into the job directory, then
// the copy is put in place and its ready marker written, last.
#pragma once

#include "facts/stage_item.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {

// In the job directory (the working directory, `job_dir`); throws Error.
void stage_node_tier(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                     const DatasetLayout& layout, const Fd& job_dir);

}  // namespace dlstage::stager
