// The staging step of `dlstage stage`: dlstage-stager through the site's
// launcher, one rank per node of the job, with the relaunches the launch
// policy allows, and why it failed when it did.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dlstage::launch {

// What the launcher's stderr told about a failure, read as it passes through.
struct LauncherReport {
    int exit_code = 0;                       // the launcher's, or 128 + the signal that killed it
    int wait_status = 0;                     // the launcher's, as from waitpid
    bool stager_spoke = false;               // a rank printed a "dlstage:" line
    bool stager_explained = false;           // a rank printed "dlstage: ... failed on NODE: ..."
    std::vector<std::string> task_failures;  // srun's "NODE: task N: REASON" lines, first first
    bool outlived_others = false;            // srun ended a task a stall bound after the first ended (--wait)
    bool time_limit = false;                 // Slurm ended the step for the job's time limit (launch/job_end)
};

struct StagerStep {
    std::string config_path;
    std::string job_id;
    std::string nodes;                // the job's node count
    std::string spec;                 // the --stage-data value
    std::vector<std::string> tuning;  // checked dlstage-stager options
};

// Inside a Slurm job: kJobIdVar and a node count (kJobNodesVar, or
// SLURM_NNODES) are set.
bool inside_job();

// The staging step of the current job, from the environment (config_path
// left for the caller): the job id and node count, checked; the job's
// DLSTAGE_* tuning knobs as dlstage-stager options, each checked by the
// stager's own rules (a typo fails at once, with one line naming the
// variable, instead of in every rank after the launch); and specs joined
// by ',', or without specs the job's own request (kStageDataVar from the
// plugin, or the option Slurm exports into a salloc shell), "" if none.
// Throws Error naming the variable.
StagerStep stager_step_from_environment(const std::vector<std::string>& specs);

// Removes the failure records of an earlier attempt, runs the step, copying the launcher's stderr to ours line by line,
// and once more if policy::retry_launch allows (saying why).  The report of the last attempt.  `on_time_limit` is
// called at once when the launcher says the job's time limit ended the step.
LauncherReport run_stager_step(const Config& config, const StagerStep& step,
                               const std::function<void()>& on_time_limit = {});

// The lines that explain a failed staging: what failing ranks recorded
// (unless they said it already), then one summary line.
std::vector<std::string> staging_failure(const Config& config, const StagerStep& step, const LauncherReport& report);

// One line for why: the first failure a rank recorded, else the summary.
std::string failure_reason(const Config& config, const StagerStep& step, const LauncherReport& report);

}  // namespace dlstage::launch
