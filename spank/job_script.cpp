#include "spank/job_script.hpp"

#include <ctime>
#include <pwd.h>

#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/stage_spec.hpp"
#include "lib/state_record.hpp"

namespace dlstage::spank {

namespace {
struct JobFacts {
    std::string job_id;
    std::string node;
    std::string user;
    std::uint32_t uid = 0;
};

// In job_script context spank_get_item answers only job id, uid and gid;
// the node and the user name come from slurmd's environment.
JobFacts job_facts(SpankApi& api)
{
    JobFacts facts;
    const auto job_id = api.job_id();
    const auto uid = api.job_uid();
    if (!job_id || !uid)
        throw Error("slurmd did not provide the job id or user id");
    facts.job_id = std::to_string(*job_id);
    facts.uid = *uid;
    facts.node = api.getenv("SLURMD_NODENAME");
    facts.user = api.getenv("SLURM_JOB_USER");
    if (facts.user.empty()) {
        if (const passwd* pw = getpwuid(*uid))
            facts.user = pw->pw_name;
    }
    if (facts.node.empty())
        throw Error("SLURMD_NODENAME is not set in the prolog environment");
    return facts;
}

toml::table base_record(const JobFacts& job, const std::string& stage_data, const char* event)
{
    return toml::table{
        {"event", event},
        {"job_id", job.job_id},
        {"node", job.node},
        {"user", job.user},
        {"uid", static_cast<std::int64_t>(job.uid)},
        {"stage_data", stage_data},
        {"time", static_cast<std::int64_t>(std::time(nullptr))},
    };
}

toml::array planned_datasets(const std::vector<StageItem>& items, const JobFacts& job)
{
    const TemplateValues values{job.job_id, job.user, job.node};
    toml::array datasets;
    for (const StageItem& item : items)
        datasets.push_back(toml::table{
            {"name", item.dataset.name},
            {"source", item.dataset.source},
            {"tier", item.tier.name},
            {"env", item.env_name},
            {"directory", tier_directory(item, values)},
        });
    return datasets;
}
}  // namespace

int job_prolog(SpankApi& api, const PluginArgs& args)
{
    const auto stage_data = api.stage_data_option();
    if (!stage_data)
        return 0;
    const JobFacts job = job_facts(api);
    Config config;
    try {
        config = load_config(choose_config_path(args.config_path, false));
    } catch (const Error& e) {
        // A broken configuration is the admins' to fix, not the node's:
        // log it loudly, keep the node in service.
        api.error("job " + job.job_id + " on " + job.node + ": " + e.what());
        return 0;
    }
    toml::table record = base_record(job, *stage_data, "prolog");
    try {
        record.insert("datasets", planned_datasets(plan_stage(config, *stage_data), job));
        record.insert("status", "accepted");
        api.info("job " + job.job_id + " on " + job.node + ": stage-data=" + *stage_data + " accepted");
    } catch (const Error& e) {
        // Valid at submit time, so the configuration changed since: not the
        // node's fault.  Record it, do not drain.
        record.insert("status", "refused");
        record.insert("message", e.what());
        api.error("job " + job.job_id + " on " + job.node + ": " + e.what());
    }
    try {
        write_record(node_record_path(config.site.state_dir, job.job_id, job.node, "prolog"), record);
    } catch (const Error& e) {
        api.error("job " + job.job_id + ": cannot write its state record: " + e.what());
    }
    return 0;
}

}  // namespace dlstage::spank
