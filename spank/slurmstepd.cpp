#include "spank/slurmstepd.hpp"

#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "config/stage_spec.hpp"
#include "job/copy_record.hpp"
#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "spank/job_facts.hpp"
#include "spank/stage_command.hpp"

namespace dlstage::spank {

namespace {
// DLSTAGE_<NAME> for each dataset whose ready marker exists on this node.
void export_paths(SpankApi& api, const Config& config, const std::string& spec)
{
    const JobFacts job = job_facts(api);
    std::vector<std::string> names;
    for (const StageItem& item : resolve_stage_data(config, spec)) {
        const DatasetLayout layout = dataset_layout(item, job.values());
        const auto marker = read_ready_marker(layout.ready_marker);
        // A split dataset's index: the one this job's stager wrote, where
        // the layout says (resolve made sure no other dataset's name is it).
        const std::string index_var = item.env_name + kSplitIndexVarSuffix;
        if (item.split && (!marker || marker->index.empty()))
            api.unsetenv(index_var);
        if (!marker) {
            // Not staged (yet) or its mount is gone: better unset than pointing
            // at nothing, also when srun passed on the batch step's value.
            api.unsetenv(item.env_name);
            continue;
        }
        if (item.split && !marker->index.empty())
            api.setenv(index_var, layout.split_index);
        // A shared copy: the one this job was given, which its mark keeps
        // alive, not a newer one made beside it since (stager/copies/copy_readers).
        const auto mark = item.tier.shared() ? read_reader_mark(layout.readers_dir, job.values().job_id) : std::nullopt;
        api.setenv(item.env_name, mark ? mark->path : marker->path);
        names.push_back(item.dataset.name);
    }
    if (!names.empty())
        api.setenv(kDatasetsVar, join(names, ","));
    else
        api.unsetenv(kDatasetsVar);
}
}  // namespace

int task_init(SpankApi& api, const PluginArgs& args)
{
    const auto spec = api.stage_data_option();
    if (!spec || in_stagers_own_step(api))
        return 0;
    try {
        // First: a configuration root code refuses must stop the job with
        // that reason, not with what follows from it.
        const Config config = load_trusted_config(choose_config_path(args.config_path, false));
        if (api.is_batch_step() && run_stage_command(api, args, *spec, api.job_env()) != 0) {
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

}  // namespace dlstage::spank
