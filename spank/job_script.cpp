#include "spank/job_script.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>

#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/job_layout.hpp"
#include "lib/safe_fs.hpp"
#include "lib/stage_spec.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"
#include "lib/tier_space.hpp"
#include "policies/admission.hpp"
#include "spank/job_facts.hpp"
#include "spank/source_facts_env.hpp"

namespace dlstage::spank {

namespace {
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
    const TemplateValues values = job.values();
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

// A tier whose root is broken: no job can stage here, so the node should
// not get jobs that ask for it.
struct BrokenTier : Error {
    using Error::Error;
};

void prepare_directories(const std::vector<StageItem>& items, const JobFacts& job)
{
    std::set<std::string> done;
    for (const StageItem& item : items) {
        const std::string dir = tier_directory(item, job.values());
        if (!done.insert(dir).second)
            continue;
        const PrepareResult result = prepare_job_dir(item.tier.path.root(), dir, job.uid, job.gid);
        if (result.status == PrepareResult::Status::BrokenTier)
            throw BrokenTier("tier " + quoted(item.tier.name) + " is broken on " + job.node + ": " + result.message);
        if (result.status == PrepareResult::Status::UserProblem)
            throw Error(result.message);
    }
}

// What the submit side learnt of each source, against this node's tier.
void check_space(SpankApi& api, const std::vector<StageItem>& items, const JobFacts& job)
{
    const auto facts = decode_facts(api.getenv(std::string("SPANK_") + kFactsVar));
    for (const StageItem& item : items) {
        const auto known = facts.find(item.dataset.name);
        if (known == facts.end())
            continue;
        const TierSpace space = measure_tier_space(tier_directory(item, job.values()));
        const policy::Verdict verdict = policy::admit(item.dataset, item.tier, known->second, space);
        if (!verdict.allowed)
            throw Error(verdict.reason + " on " + job.node);
    }
}

void write_node_record(SpankApi& api, const Config& config, const JobFacts& job, const char* event,
                       const toml::table& record)
{
    try {
        write_record(node_record_path(config.site.state_dir, job.job_id, job.node, event), record);
    } catch (const Error& e) {
        api.error("job " + job.job_id + ": cannot write its state record: " + e.what());
    }
}

// The job's user may write progress records here (the rest of state_dir
// is root's).  Walked like a tier directory: no symlink is followed.
void prepare_user_state_dir(SpankApi& api, const Config& config, const JobFacts& job)
{
    const std::string root = job_state_dir(config.site.state_dir, job.job_id);
    const PrepareResult result = prepare_job_dir(root, job_user_dir(config.site.state_dir, job.job_id), job.uid, job.gid);
    if (result.status != PrepareResult::Status::Ready)
        api.error("job " + job.job_id + ": no progress records: " + result.message);
}

// What both prolog and epilog start from.
struct ScriptStart {
    std::string stage_data;
    JobFacts job;
    Config config;
};

// Nothing when the job asked for no data, or when the configuration cannot
// be read (logged): a broken configuration is the admins' to fix, not the
// node's, so it never drains.
std::optional<ScriptStart> start_script(SpankApi& api, const PluginArgs& args)
{
    const auto stage_data = api.stage_data_option();
    if (!stage_data)
        return std::nullopt;
    ScriptStart start{*stage_data, job_facts(api), {}};
    try {
        start.config = load_config(choose_config_path(args.config_path, false));
    } catch (const Error& e) {
        api.error("job " + start.job.job_id + " on " + start.job.node + ": " + e.what());
        return std::nullopt;
    }
    return start;
}
}  // namespace

int job_prolog(SpankApi& api, const PluginArgs& args)
{
    const auto start = start_script(api, args);
    if (!start)
        return 0;
    const JobFacts& job = start->job;
    const std::string& stage_data = start->stage_data;
    toml::table record = base_record(job, stage_data, "prolog");
    int rc = 0;
    try {
        const auto items = plan_stage(start->config, stage_data);
        record.insert("datasets", planned_datasets(items, job));
        prepare_directories(items, job);
        check_space(api, items, job);
        record.insert("status", "ready");
        api.info("job " + job.job_id + " on " + job.node + ": stage-data=" + stage_data + " prepared");
    } catch (const BrokenTier& e) {
        record.insert_or_assign("status", "broken");
        record.insert_or_assign("message", e.what());
        api.error(e.what());
        rc = -1;
    } catch (const Error& e) {
        // The user's problem (or a configuration changed since submit):
        // recorded for the stager to report; the node stays in service.
        record.insert_or_assign("status", "failed");
        record.insert_or_assign("message", e.what());
        api.error("job " + job.job_id + " on " + job.node + ": " + e.what());
    }
    write_node_record(api, start->config, job, "prolog", record);
    prepare_user_state_dir(api, start->config, job);
    return rc;
}

int job_epilog(SpankApi& api, const PluginArgs& args)
{
    const auto start = start_script(api, args);
    if (!start)
        return 0;
    const JobFacts& job = start->job;
    toml::table record = base_record(job, start->stage_data, "epilog");
    toml::array problems;
    std::uint64_t removed = 0;
    std::int64_t unmounted = 0;
    try {
        const auto items = plan_stage(start->config, start->stage_data);
        // Squashfs mounts first, whatever the tier keeps: a mount must not
        // outlive its job, and removal never crosses into a mount.
        for (const StageItem& item : items) {
            if (item.dataset.mode != Mode::Mount)
                continue;
            const DetachResult detached =
                detach_mount_within(item.tier.path.root(), dataset_layout(item, job.values()).dataset_dir);
            if (!detached.problem.empty())
                problems.push_back(detached.problem);
            else if (detached.detached)
                ++unmounted;
        }
        std::set<std::string> done;
        for (const StageItem& item : items) {
            const std::string dir = tier_directory(item, job.values());
            if (item.tier.cleanup != Cleanup::JobEnd || !done.insert(dir).second)
                continue;
            const RemoveResult result = remove_tree_within(item.tier.path.root(), dir);
            removed += result.removed;
            for (const std::string& problem : result.problems)
                problems.push_back(problem);
        }
    } catch (const Error& e) {
        problems.push_back(std::string(e.what()));
    }
    for (const auto& problem : problems)
        api.error("job " + job.job_id + " on " + job.node + ": cleanup: " + problem.value_or(std::string()));
    record.insert("status", problems.empty() ? "cleaned" : "incomplete");
    record.insert("removed", static_cast<std::int64_t>(removed));
    if (unmounted > 0)
        record.insert("unmounted", unmounted);
    record.insert("problems", problems);
    write_node_record(api, start->config, job, "epilog", record);
    return 0;
}

}  // namespace dlstage::spank
