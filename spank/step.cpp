#include "spank/step.hpp"

#include <algorithm>

#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/job_layout.hpp"
#include "lib/stage_spec.hpp"
#include "lib/strings.hpp"
#include "spank/job_facts.hpp"

extern char** environ;

namespace dlstage::spank {

namespace {
std::vector<std::string> process_environment()
{
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
        env.emplace_back(*e);
    return env;
}

// env with NAME=value replacing any earlier NAME.
void put(std::vector<std::string>& env, const std::string& name, const std::string& value)
{
    const std::string prefix = name + "=";
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return starts_with(e, prefix); }),
              env.end());
    env.push_back(prefix + value);
}

int run_stage(SpankApi& api, const PluginArgs& args, const std::string& spec, std::vector<std::string> env)
{
    put(env, "DLSTAGE_STAGE_DATA", spec);
    put(env, "DLSTAGE_CONFIG", choose_config_path(args.config_path, false));
    const int rc = api.run({args.dlstage_path, "stage", "--quiet"}, env);
    if (rc == -1 || rc == 127)
        api.error("cannot run " + args.dlstage_path + " (plugstack.conf dlstage=): staging did not start");
    return rc;
}

// DLSTAGE_<NAME> for each dataset whose ready marker exists on this node.
void export_paths(SpankApi& api, const Config& config, const std::string& spec)
{
    const JobFacts job = job_facts(api);
    std::vector<std::string> names;
    for (const StageItem& item : resolve_stage_data(config, spec)) {
        const auto marker = read_ready_marker(dataset_layout(item, job.values()).ready_marker);
        if (!marker) {
            // Not staged (yet) or its mount is gone: better unset than pointing
            // at nothing, also when srun passed on the batch step's value.
            api.unsetenv(item.env_name);
            continue;
        }
        api.setenv(item.env_name, marker->path);
        names.push_back(item.dataset.name);
    }
    if (!names.empty())
        api.setenv(kDatasetsEnvName, join(names, ","));
    else
        api.unsetenv(kDatasetsEnvName);
}
}  // namespace

int task_init(SpankApi& api, const PluginArgs& args)
{
    const auto spec = api.stage_data_option();
    if (!spec || api.getenv(kStagerStepVar) == "1")
        return 0;
    try {
        // First: a configuration root code refuses must stop the job with
        // that reason, not with what follows from it.
        const Config config = load_trusted_config(choose_config_path(args.config_path, false));
        if (api.is_batch_step() && run_stage(api, args, *spec, api.job_env()) != 0) {
            api.error("staging " + *spec + " failed; the job script does not start (see the messages above)");
            return -1;
        }
        export_paths(api, config, *spec);
        return 0;
    } catch (const Error& e) {
        api.error(e.what());
        return -1;
    }
}

int local_user_init(SpankApi& api, const PluginArgs& args, bool inside_allocation)
{
    const auto spec = api.stage_data_option();
    if (!spec || inside_allocation || api.getenv(kStagerStepVar) == "1")
        return 0;
    const auto job_id = api.job_id();
    const auto nnodes = api.job_nnodes();
    if (!job_id || !nnodes) {
        api.error("srun did not provide the job id or node count; cannot stage " + *spec);
        return -1;
    }
    std::vector<std::string> env = process_environment();
    put(env, "SLURM_JOB_ID", std::to_string(*job_id));
    put(env, "SLURM_JOB_NUM_NODES", std::to_string(*nnodes));
    if (run_stage(api, args, *spec, env) != 0) {
        api.error("staging " + *spec + " failed; the tasks do not start (see the messages above)");
        return -1;
    }
    return 0;
}

}  // namespace dlstage::spank
