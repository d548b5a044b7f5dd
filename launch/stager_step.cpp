#include "launch/stager_step.hpp"

#include <cstdlib>
#include <iostream>
#include <unistd.h>

#include "config/stager_tuning.hpp"
#include "job/state_record.hpp"
#include "launch/job_end.hpp"
#include "launch/job_step.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "policies/launch_retry.hpp"

extern char** environ;

namespace dlstage::launch {

namespace {
std::vector<std::string> launcher_command(const Config& config, const StagerStep& step)
{
    std::vector<std::string> argv =
        job_step_command(config, step.job_id, step.nodes, kStageStep, OnTaskFailure::StopStep, StepProgram::Mpi);
    argv.insert(argv.end(), {helper_program(kStagerProgram), "--config", step.config_path, "--job", step.job_id});
    argv.insert(argv.end(), step.tuning.begin(), step.tuning.end());
    argv.push_back(step.spec);
    return argv;
}

void watch_line(const std::string& line, LauncherReport& report)
{
    report.stager_spoke = report.stager_spoke || starts_with(line, kMessagePrefix);
    if (starts_with(line, kMessagePrefix) && line.find(kFailedOn) != std::string::npos)
        report.stager_explained = true;
    // srun --wait (launch/job_step) says this before it ends the tasks left.
    report.outlived_others = report.outlived_others || starts_with(line, "srun: First task exited");
    const std::string srun_error = "srun: error: ";
    if (starts_with(line, srun_error) && line.find(": task ") != std::string::npos)
        report.task_failures.push_back(line.substr(srun_error.size()));
}

// Runs the launcher, copying its stderr to ours line by line and watching
// for failures.
LauncherReport run_once(const std::vector<std::string>& argv, const std::function<void()>& on_time_limit)
{
    set_step_environment();
    LauncherReport report;
    try {
        StderrRunOptions options;
        options.started = launcher_started;  // SIGTERM passed on to it (launch/job_end)
        const struct Forget {
            ~Forget() { launcher_started(0); }  // its pid may be another's soon
        } forget;
        report.wait_status = run_reading_stderr(
            argv,
            [&](const std::string& line) {
                std::cerr << line << "\n";
                watch_line(line, report);
                if (!report.time_limit && says_time_limit(line)) {
                    report.time_limit = true;
                    if (on_time_limit)
                        on_time_limit();
                }
            },
            options);
        report.exit_code = shell_exit_code(report.wait_status);
    } catch (const Error& e) {  // it could not be started
        say(std::string(e.what()) + " (site.launcher)");
        report.exit_code = 127;
        report.wait_status = 127 << 8;
    }
    return report;
}

std::string env_or_empty(const char* name)
{
    const char* value = std::getenv(name);
    return value ? value : "";
}

// The variable that holds the job's node count: kJobNodesVar, else the older SLURM_NNODES.
const char* nodes_variable()
{
    return env_or_empty(kJobNodesVar).empty() ? "SLURM_NNODES" : kJobNodesVar;
}

std::string job_request()
{
    if (const std::string direct = env_or_empty(kStageDataVar); !direct.empty())
        return direct;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::size_t eq = entry.find('=');
        if (eq != std::string::npos && ends_with(entry.substr(0, eq), kStageDataOptionVar))
            return entry.substr(eq + 1);
    }
    return "";
}

std::vector<std::string> tuning_options()
{
    std::vector<std::string> options;
    StagerTuning checked;
    for (const TuningKnob& knob : tuning_knobs()) {
        const std::string variable(knob.variable);
        const std::string value = env_or_empty(variable.c_str());
        if (value.empty())
            continue;
        naming(variable, [&] { knob.set(value, checked); });
        options.insert(options.end(), {std::string(knob.option), value});
    }
    return options;
}

std::string slurm_variable(const char* variable)
{
    return naming(variable, [&] { return slurm_number(env_or_empty(variable)); });
}

// What failing ranks recorded.
std::vector<std::string> recorded_failures(const Config& config, const std::string& job_id)
{
    std::vector<std::string> messages;
    for (const UserRecordFile& file : read_user_records(config.site.state_dir, job_id, UserRecord::Failure))
        messages.push_back(printable(file.record["message"].value_or(std::string())));
    return messages;
}
}  // namespace

bool inside_job()
{
    return !env_or_empty(kJobIdVar).empty() && !env_or_empty(nodes_variable()).empty();
}

StagerStep stager_step_from_environment(const std::vector<std::string>& specs)
{
    StagerStep step;
    step.job_id = slurm_variable(kJobIdVar);
    step.nodes = slurm_variable(nodes_variable());
    step.tuning = tuning_options();
    step.spec = specs.empty() ? job_request() : join(specs, ",");
    return step;
}

LauncherReport run_stager_step(const Config& config, const StagerStep& step, const std::function<void()>& on_time_limit)
{
    for (const std::string& stale : user_record_paths(config.site.state_dir, step.job_id, UserRecord::Failure))
        unlink(stale.c_str());  // from an earlier attempt
    LauncherReport report;
    for (int attempt = 1;; ++attempt) {
        report = run_once(launcher_command(config, step), on_time_limit);
        // No relaunch into a job that is ending (cancelled, requeued, timed out).
        if (report.exit_code == 0 || report.time_limit || job_ending())
            return report;
        const policy::Verdict again = policy::retry_launch({attempt, report.stager_spoke, report.task_failures});
        if (!again.allowed)
            return report;
        say(again.reason);
    }
}

namespace {
// "staging SPEC failed on NODE", NODE from srun's first "NODE: task N: REASON".
std::string failed_on(const StagerStep& step, const std::string& task_failure)
{
    return "staging " + step.spec + " failed on " + task_failure.substr(0, task_failure.find(':'));
}
}  // namespace

std::vector<std::string> staging_failure(const Config& config, const StagerStep& step, const LauncherReport& report)
{
    // A rank that failed said why; one that was killed could not: then
    // srun's line names the node.
    const auto recorded = recorded_failures(config, step.job_id);
    std::vector<std::string> lines = report.stager_explained ? std::vector<std::string>{} : recorded;
    if (report.stager_explained || !recorded.empty())
        lines.push_back("staging " + step.spec + " failed; see the messages above");
    else if (!report.task_failures.empty() && report.outlived_others)
        lines.push_back(failed_on(step, report.task_failures.front()) + ": its stager still ran " +
                        std::to_string(config.site.stall_timeout) +
                        " s after the others had ended (site.stall_timeout): it stopped, or the node froze or was "
                        "cut off (" +
                        report.task_failures.front() + ")");
    else if (!report.task_failures.empty())
        lines.push_back(failed_on(step, report.task_failures.front()) + ": the stager ended early (" +
                        report.task_failures.front() + ")");
    else
        lines.push_back("staging " + step.spec + " failed (the launcher " + describe_exit(report.wait_status) + ")");
    return lines;
}

std::string failure_reason(const Config& config, const StagerStep& step, const LauncherReport& report)
{
    const auto recorded = recorded_failures(config, step.job_id);
    return recorded.empty() ? staging_failure(config, step, report).back() : recorded.front();
}

}  // namespace dlstage::launch
