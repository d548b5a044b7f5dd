// Staging to a shared tier (scope = "shared"): one copy on the shared file
// system for all nodes of the job, kept for the user's later jobs.
//
//   1. rank 0 takes the dataset's lock in the user's tier directory
//      (stager/copies/copy_lock), waiting while another job stages it;
//   2. the plan (a walk or the manifest) gives the source's identity; with
//      the copy's record and contents file it decides
//      (policies/shared_copy): reuse, repair or stage;
//   3. the copy is checked by stat, each rank its share;
//   4. reuse: nothing is read.  repair: each rank fetches its share of the
//      missing files again.  stage: each rank reads and writes its share
//      of the chunks into .partial-NAME, renamed into place when complete;
//      a replaced copy is renamed aside, then removed;
//   5. rank 0 writes the contents file, then the record (the ready marker)
//      with the use, and releases the lock.
#pragma once

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {

void stage_shared(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                  const DatasetLayout& layout, const Fd& job_dir);

}  // namespace dlstage::stager
