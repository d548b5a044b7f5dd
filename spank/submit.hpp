// Submit side (sbatch, salloc, srun; allocator and local context): check
// --stage-data before a job exists, so a bad request costs the user one
// clear line and the cluster nothing.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// 0: accepted (or no --stage-data); -1: refused, the reason already
// reported through api.error().
int validate_submission(SpankApi& api, const PluginArgs& args);

}  // namespace dlstage::spank
