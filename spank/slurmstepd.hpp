// Remote context (slurmstepd), before each task starts, as the job's user:
// the batch step stages first (the script starts only after every node
// holds the verified data); every task then gets DLSTAGE_<NAME> and
// DLSTAGE_DATASETS from this node's ready markers.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// 0, or -1 (the task must not start) when staging failed.
int task_init(SpankApi& api, const PluginArgs& args);

}  // namespace dlstage::spank
