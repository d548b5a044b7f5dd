// Data locality at submit (sbatch, salloc, srun creating a job; as the
// user): a job asking for node-cached datasets gets a soft preference,
// Slurm's --prefer, for the nodes whose features say they hold the user's
// entries of them ([locality] node_features; tier/cache_features sets the
// features).  Never a constraint: when no such node is free the job runs
// where it would have run.  Which preference, if any, is
// policies/node_features (job_preference).
#pragma once

#include <cstddef>
#include <vector>

#include "config/config.hpp"
#include "facts/stage_item.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// `nodes` is the fewest nodes -N asks for (0: not said).  Nothing when
// [locality] is off, or Slurm does not answer in time.
void prefer_cached_nodes(SpankApi& api, const Config& config, const std::vector<StageItem>& items, std::size_t nodes);

}  // namespace dlstage::spank
