// gc on a node cache (a node tier with cleanup = "cache"): the use records
// of jobs that ended forgotten, then each entry decided by policies/gc
// (idle too long, or next in line while the tier is over its high
// watermark; never one a running job uses) and evicted as its owner
// (tier/cache_entries).
#pragma once

#include "config/config.hpp"
#include "gc/gc_outcome.hpp"
#include "job/slurm_jobs.hpp"
#include "policies/gc.hpp"

namespace dlstage {

GcOutcome gc_node_cache(const Tier& tier, const Config& config, const SlurmJobs& jobs,
                        const policy::GcSettings& settings, const GcRequest& options);

}  // namespace dlstage
