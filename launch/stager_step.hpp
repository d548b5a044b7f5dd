// The staging step of `dlstage stage`: dlstage-stager through the site's
// launcher, one rank per node of the job, with the one relaunch the launch
// policy allows, and why it failed when it did.
#pragma once

#include <string>
#include <vector>

#include "lib/config.hpp"

namespace dlstage::launch {

// What the launcher's stderr told about a failure, read as it passes through.
struct LauncherReport {
    int exit_code = 0;              // the launcher's, or 128 + the signal that killed it
    int wait_status = 0;            // the launcher's, as from waitpid
    bool stager_spoke = false;      // a rank printed a "dlstage:" line
    bool stager_explained = false;  // a rank printed "dlstage: ... failed on NODE: ..."
    std::string task_failure;       // srun's first "NODE: task N: REASON"
};

struct StagerStep {
    std::string config_path;
    std::string job_id;
    std::string nodes;                // the job's node count
    std::string spec;                 // the --stage-data value
    std::vector<std::string> tuning;  // checked dlstage-stager options
};

// Removes the failure records of an earlier attempt, runs the step, copying the launcher's stderr to ours line by line, and
// once more if policy::retry_launch allows (saying why).  The report of
// the last attempt.
LauncherReport run_stager_step(const Config& config, const StagerStep& step);

// The lines that explain a failed staging: what failing ranks recorded
// (unless they said it already), then one summary line.
std::vector<std::string> staging_failure(const Config& config, const StagerStep& step,
                                         const LauncherReport& report);

}  // namespace dlstage::launch
