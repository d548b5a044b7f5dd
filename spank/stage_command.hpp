// Starting `dlstage stage` from the plugin, as the job's user: the one way
// both job-start contexts (srun that created its job, the batch step in
// slurmstepd) stage, so that staging behaves the same as when a user runs
// the command inside salloc.
#pragma once

#include <string>
#include <vector>

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// True in a step dlstage started itself (the stager, the mount holder).
bool in_stagers_own_step(SpankApi& api);

// env with NAME=value replacing any earlier NAME.
void put_env(std::vector<std::string>& env, const std::string& name, const std::string& value);

// Runs `dlstage stage --quiet` for spec with env (plus the request and the
// config path) and returns its exit status; says so when it cannot start.
int run_stage_command(SpankApi& api, const PluginArgs& args, const std::string& spec, std::vector<std::string> env);

}  // namespace dlstage::spank
