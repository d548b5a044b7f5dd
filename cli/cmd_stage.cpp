// dlstage stage [SPEC...]: stage datasets to every node of the current job.
//
// The plugin runs this before a batch script or srun's tasks start; users
// run it in salloc (or any job script).  It starts dlstage-stager through
// the site's launcher, one rank per node, and waits (launch/); then the
// mount holder for datasets in mode = "mount" (mounts/).  Here: the command
// line, the job's environment, and what stage says.
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "launch/stager_step.hpp"
#include "lib/contract.hpp"
#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/identity.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/stage_spec.hpp"
#include "lib/stager_tuning.hpp"
#include "lib/strings.hpp"
#include "mounts/holder_step.hpp"

extern char** environ;

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage stage [--quiet] [SPEC[,SPEC...]]...\n"
                 "Stage datasets to every node of the current Slurm job (inside salloc, sbatch or\n"
                 "srun).  SPEC is NAME[:TIER] as for --stage-data; without SPEC, the job's own\n"
                 "--stage-data request.  Runs dlstage-stager through the site's launcher, one\n"
                 "rank per node, and waits; exit 0 once every node holds the verified data.\n"
                 "\n"
                 "Environment: DLSTAGE_CHUNK_SIZE (default 4M), DLSTAGE_WINDOW (chunks in flight\n"
                 "per node, default 16), DLSTAGE_READERS and DLSTAGE_WRITERS (threads per node,\n"
                 "default 4 each), DLSTAGE_RATE_LIMIT (read bytes/s per node, default unlimited),\n"
                 "DLSTAGE_PROGRESS (seconds between progress lines, default 5), DLSTAGE_EXCHANGE\n"
                 "(ring, or bcast for the baseline).  A malformed value is refused before anything\n"
                 "is launched.\n";
}

std::string env_or(const char* name, const std::string& fallback)
{
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

// The job's own request: the plugin passes it as DLSTAGE_STAGE_DATA; in a
// salloc shell Slurm exports the option as ..._SLURM_SPANK_OPTION_dlstage_stage_data.
std::string job_request()
{
    if (const std::string direct = env_or(kStageDataVar, ""); !direct.empty())
        return direct;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::size_t eq = entry.find('=');
        if (eq != std::string::npos && ends_with(entry.substr(0, eq), kStageDataOptionVar))
            return entry.substr(eq + 1);
    }
    return "";
}

// The job's DLSTAGE_* tuning knobs as dlstage-stager options, each checked
// here by the stager's own rules: a typo fails at once, with one line naming
// the variable, instead of in every rank after the launch.
std::vector<std::string> tuning_options()
{
    std::vector<std::string> options;
    StagerTuning checked;
    for (const TuningKnob& knob : tuning_knobs()) {
        const std::string variable(knob.variable);
        const std::string value = env_or(variable.c_str(), "");
        if (value.empty())
            continue;
        naming(variable, [&] { knob.set(value, checked); });
        options.insert(options.end(), {std::string(knob.option), value});
    }
    return options;
}

// A count Slurm put in the environment, checked before it goes into paths
// and srun's options; as canonical digits.
std::string slurm_number(const char* variable)
{
    return naming(variable, [&] { return std::to_string(parse_count(env_or(variable, ""), 1, kMaxSlurmNumber)); });
}

// Where the data went, for a user in salloc; "<node>" stands for %n.
void print_paths(const std::vector<StageItem>& items, const std::string& job_id)
{
    const std::string user = this_user_name();
    for (const StageItem& item : items) {
        const std::string dir = item.tier.path.expand({job_id, user, "<node>"});
        say(item.env_name + " is set in each srun step (data in " + dir + "/" + item.dataset.name + " on every node)");
    }
}
}  // namespace

int cmd_stage(const GlobalOptions& options, const std::vector<std::string>& args)
{
    std::vector<std::string> specs;
    bool quiet = false;
    for (const std::string& arg : args) {
        if (arg == "-h" || arg == "--help") {
            print_help();
            return kExitOk;
        }
        if (arg == "-q" || arg == "--quiet")
            quiet = true;
        else if (!arg.empty() && arg[0] == '-')
            return usage_error("stage: unknown option '" + arg + "'", "stage");
        else
            specs.push_back(arg);
    }
    const char* nodes_variable = env_or("SLURM_JOB_NUM_NODES", "").empty() ? "SLURM_NNODES" : "SLURM_JOB_NUM_NODES";
    if (env_or("SLURM_JOB_ID", "").empty() || env_or(nodes_variable, "").empty()) {
        say("stage runs inside a Slurm job (salloc, sbatch, srun): SLURM_JOB_ID and SLURM_JOB_NUM_NODES are not set");
        return kExitFailure;
    }
    const std::string job_id = slurm_number("SLURM_JOB_ID");
    const std::string nodes = slurm_number(nodes_variable);
    const std::vector<std::string> tuning = tuning_options();
    const std::string spec = specs.empty() ? job_request() : join(specs, ",");
    if (spec.empty())
        return usage_error("stage: no SPEC given and the job has no --stage-data request", "stage");

    const std::string config_path = choose_config_path(options.config_path, true);
    const Config config = load_config_for_caller(config_path);
    const auto items = resolve_stage_data(config, spec);  // refuse bad input before starting anything
    const launch::StagerStep step{config_path, job_id, nodes, spec, tuning};
    if (const launch::LauncherReport report = launch::run_stager_step(config, step); report.exit_code != 0) {
        for (const std::string& line : launch::staging_failure(config, step, report))
            say(line);
        return kExitFailure;
    }
    if (!mounts::start_mount_holder(config, config_path, job_id, nodes, spec))
        return kExitFailure;
    if (!quiet)
        print_paths(items, job_id);
    return kExitOk;
}

}  // namespace dlstage::cli
