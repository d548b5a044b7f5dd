// gc on a node cache (a node tier with cleanup = "cache"): the use records
// of jobs that ended forgotten, then each entry decided by policies/gc
// (idle too long, or next in line while the tier is over its high
// watermark; never one a running job uses) and evicted as its owner
// (tier/cache_evict).
#pragma once

#include <functional>

#include "config/config.hpp"
#include "gc/gc_outcome.hpp"
#include "job/slurm_jobs.hpp"
#include "policies/gc.hpp"

namespace dlstage {

// `ask_slurm_now` answers which jobs exist and which have processes here;
// it is asked when the node cache's turn comes.
GcOutcome gc_node_cache(const Tier& tier, const Config& config, const std::function<SlurmJobs()>& ask_slurm_now,
                        const policy::GcSettings& settings, const GcRequest& options);

}  // namespace dlstage
