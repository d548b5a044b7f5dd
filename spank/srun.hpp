// Local context: the srun that creates its own job (no sbatch, no salloc),
// after the allocation and before its tasks start, as the user.  It stages
// for the job; the tasks then start with DLSTAGE_<NAME> set by task_init
// (slurmstepd.cpp) on each node.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// inside_allocation: srun ran inside an existing job (sbatch, salloc), where
// the batch step or the user stages; only an srun that created its job stages.
// 0, or -1 (the tasks must not start) when staging failed.
int local_user_init(SpankApi& api, const PluginArgs& args, bool inside_allocation);

}  // namespace dlstage::spank
