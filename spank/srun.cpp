#include "spank/srun.hpp"

#include <string>
#include <vector>

#include "lib/contract.hpp"
#include "spank/stage_command.hpp"

namespace dlstage::spank {

int local_user_init(SpankApi& api, const PluginArgs& args, bool inside_allocation)
{
    const auto spec = api.stage_data_option();
    if (!spec || inside_allocation || in_stagers_own_step(api))
        return 0;
    const auto job_id = api.job_id();
    const auto nnodes = api.job_nnodes();
    if (!job_id || !nnodes) {
        api.error("srun did not provide the job id or node count; cannot stage " + *spec);
        return -1;
    }
    // srun's own environment does not know the job it is creating yet.
    std::vector<std::string> env = api.job_env();
    put_env(env, kJobIdVar, std::to_string(*job_id));
    put_env(env, kJobNodesVar, std::to_string(*nnodes));
    if (run_stage_command(api, args, *spec, env) != 0) {
        api.error("staging " + *spec + " failed; the tasks do not start (see the messages above)");
        return -1;
    }
    return 0;
}

}  // namespace dlstage::spank
