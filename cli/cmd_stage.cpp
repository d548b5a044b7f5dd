// dlstage stage [SPEC...]: stage datasets to every node of the current job.
//
// The plugin runs this before a batch script or srun's tasks start; users
// run it in salloc (or any job script).  It starts dlstage-stager through
// the site's launcher, one rank per node, and waits.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/launch.hpp"
#include "cli/mounts.hpp"
#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/identity.hpp"
#include "lib/number.hpp"
#include "lib/stage_spec.hpp"
#include "lib/stager_tuning.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "policies/launch_retry.hpp"

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

std::vector<std::string> launcher_command(const Config& config, const std::string& job_id, const std::string& nodes,
                                          const std::string& config_path, const std::string& spec,
                                          const std::vector<std::string>& tuning)
{
    std::vector<std::string> argv = job_step_command(config, job_id, nodes, kStageStep, OnTaskFailure::StopStep);
    argv.insert(argv.end(), {sibling_program(kStagerProgram), "--config", config_path, "--job", job_id});
    argv.insert(argv.end(), tuning.begin(), tuning.end());
    argv.push_back(spec);
    return argv;
}

// What the launcher's stderr told about a failure, read as it passes through.
struct LauncherReport {
    bool stager_spoke = false;      // a rank printed a "dlstage:" line
    bool stager_explained = false;  // a rank printed "dlstage: ... failed on NODE: ..."
    std::string task_failure;       // srun's first "NODE: task N: REASON"
};

void watch_line(const std::string& line, LauncherReport& report)
{
    report.stager_spoke = report.stager_spoke || starts_with(line, kMessagePrefix);
    if (starts_with(line, kMessagePrefix) && line.find(" failed on ") != std::string::npos)
        report.stager_explained = true;
    const std::string srun_error = "srun: error: ";
    if (report.task_failure.empty() && starts_with(line, srun_error) && line.find(": task ") != std::string::npos)
        report.task_failure = line.substr(srun_error.size());
}

// Runs the launcher, copying its stderr to ours line by line and watching
// for failures.  Its exit status, or 128 + the signal that killed it.
int run_and_wait(const std::vector<std::string>& argv, LauncherReport& report)
{
    // The stager's own srun step must not stage again (the plugin sees this),
    // and on an oversubscribed node a waiting rank should yield its core.
    setenv(kStagerStepVar, "1", 1);
    setenv("OMPI_MCA_mpi_yield_when_idle", env_or("OMPI_MCA_mpi_yield_when_idle", "1").c_str(), 1);
    try {
        return shell_exit_code(run_reading_stderr(argv, [&](const std::string& line) {
            std::cerr << line << "\n";
            watch_line(line, report);
        }));
    } catch (const Error& e) {  // it could not be started
        std::cerr << kMessagePrefix << e.what() << " (site.launcher)\n";
        return 127;
    }
}

// What failing ranks recorded.
std::vector<std::string> recorded_failures(const Config& config, const std::string& job_id)
{
    std::vector<std::string> messages;
    for (const UserRecordFile& file : read_user_records(config.site.state_dir, job_id, UserRecord::Failure))
        messages.push_back(printable(file.record["message"].value_or(std::string())));
    return messages;
}

// Where the data went, for a user in salloc; "<node>" stands for %n.
void print_paths(const std::vector<StageItem>& items, const std::string& job_id)
{
    const std::string user = this_user_name();
    for (const StageItem& item : items) {
        const std::string dir = item.tier.path.expand({job_id, user, "<node>"});
        std::cerr << kMessagePrefix << item.env_name << " is set in each srun step (data in " << dir << "/"
                  << item.dataset.name << " on every node)\n";
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
        print_error("stage runs inside a Slurm job (salloc, sbatch, srun): SLURM_JOB_ID and SLURM_JOB_NUM_NODES are not set");
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
    for (const std::string& stale : user_record_paths(config.site.state_dir, job_id, UserRecord::Failure))  // from an earlier attempt
        unlink(stale.c_str());
    LauncherReport report;
    int rc = 0;
    for (int attempt = 1;; ++attempt) {
        report = LauncherReport{};
        rc = run_and_wait(launcher_command(config, job_id, nodes, config_path, spec, tuning), report);
        if (rc == 0)
            break;
        const policy::Verdict again =
            policy::retry_launch({attempt, report.stager_spoke, report.task_failure});
        if (!again.allowed)
            break;
        print_error(again.reason);
    }
    if (rc != 0) {
        // A rank that failed said why; one that was killed could not: then
        // srun's line names the node.
        const auto recorded = recorded_failures(config, job_id);
        for (const std::string& reason : report.stager_explained ? std::vector<std::string>{} : recorded)
            print_error(reason);
        if (report.stager_explained || !recorded.empty())
            print_error("staging " + spec + " failed; see the messages above");
        else if (!report.task_failure.empty())
            print_error("staging " + spec + " failed on " + report.task_failure.substr(0, report.task_failure.find(':')) +
                        ": the stager ended early (" + report.task_failure + ")");
        else
            print_error("staging " + spec + " failed (launcher exit status " + std::to_string(rc) + ")");
        return kExitFailure;
    }
    if (start_mount_holder(config, config_path, job_id, nodes, spec) != kExitOk)
        return kExitFailure;
    if (!quiet)
        print_paths(items, job_id);
    return kExitOk;
}

}  // namespace dlstage::cli
