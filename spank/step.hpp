// Job start, as the job's user:
//  - remote context (slurmstepd), before each task: for the batch step,
//    stage first (the script starts only after every node holds the
//    verified data); for every task, export DLSTAGE_<NAME> and
//    DLSTAGE_DATASETS from this node's ready markers.
//  - local context (srun that created the job), after the allocation and
//    before the tasks: stage.
// Staging itself is `dlstage stage`, the command users run in salloc.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// The variable the plugin sets on the stager's own step, so that step
// neither validates nor stages again.
inline constexpr const char* kStagerStepVar = "DLSTAGE_STAGER_STEP";

// 0, or -1 (the task must not start) when staging failed.
int task_init(SpankApi& api, const PluginArgs& args);

// inside_allocation: srun ran inside an existing job (sbatch, salloc), where
// the batch step or the user stages; only an srun that created its job stages.
int local_user_init(SpankApi& api, const PluginArgs& args, bool inside_allocation);

}  // namespace dlstage::spank
