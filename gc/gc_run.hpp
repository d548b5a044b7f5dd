// What `dlstage gc` does on a node, for the command to print: each part
// (a cleanup = "job-end" tier, a node cache, the records in state_dir) in
// a child bounded in time, its leftovers decided by policies/gc and found
// and removed by gc/gc_leftovers (node caches: gc/gc_cache).
#pragma once

#include <functional>

#include "config/config.hpp"
#include "gc/gc_outcome.hpp"
#include "job/slurm_jobs.hpp"

namespace dlstage {

// `report` gets each part's outcome as soon as the part is done, so that
// its lines show while the next part runs.
// `jobs` is Slurm's answer at gc's start; a node cache's part asks again
// with `ask_slurm_now` when its turn comes (gc/gc_cache.hpp).
void run_gc(const Config& config, const SlurmJobs& jobs, const std::function<SlurmJobs()>& ask_slurm_now,
            const GcRequest& request, const std::function<void(const GcOutcome&)>& report);

}  // namespace dlstage
