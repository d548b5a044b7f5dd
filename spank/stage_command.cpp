#include "spank/stage_command.hpp"

#include <algorithm>

#include "config/config_paths.hpp"
#include "lib/contract.hpp"
#include "lib/strings.hpp"

namespace dlstage::spank {

bool in_stagers_own_step(SpankApi& api)
{
    return api.getenv(kStagerStepVar) == "1";
}

void put_env(std::vector<std::string>& env, const std::string& name, const std::string& value)
{
    const std::string prefix = name + "=";
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return starts_with(e, prefix); }),
              env.end());
    env.push_back(prefix + value);
}

int run_stage_command(SpankApi& api, const PluginArgs& args, const std::string& spec, std::vector<std::string> env)
{
    put_env(env, kStageDataVar, spec);
    put_env(env, kConfigVar, choose_config_path(args.config_path, false));
    const int rc = api.run({args.dlstage_path, kStageCommand, "--quiet"}, env);
    if (rc == -1 || rc == 127)
        api.error("cannot run " + args.dlstage_path + " (plugstack.conf dlstage=): staging did not start");
    return rc;
}

}  // namespace dlstage::spank
