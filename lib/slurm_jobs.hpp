// What Slurm says of jobs now, for `dlstage status`: whether a job whose
// records we read still exists, its state, its array ids and its nodes.
// One squeue call for all jobs, bounded in time; when Slurm cannot be
// asked the answer says so (never a guess).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace dlstage {

struct SlurmJob {
    std::string job_id;         // the job's own id (%A): state_dir/jobs/<this>
    std::string array_job_id;   // "" unless an array task (%F)
    std::string array_task_id;  // "" unless an array task (%K)
    std::string state;          // RUNNING, PENDING, COMPLETED, ...
    std::string nodelist;       // n[1-3], "" while pending
};

struct SlurmJobs {
    bool asked = false;                   // squeue answered
    std::string problem;                  // why not, when !asked
    std::map<std::string, SlurmJob> jobs;  // by job_id

    const SlurmJob* find(const std::string& job_id) const;
};

// squeue's fields, as slurm_jobs asks for them: "%A|%F|%K|%T|%N".
inline constexpr const char* kSqueueFormat = "%A|%F|%K|%T|%N";

// Parses squeue -h -o kSqueueFormat output; lines that do not have five
// fields are skipped.  An array task's %F/%K of "N/A" become "".
SlurmJobs parse_squeue(std::string_view text);

// Runs `squeue -h -a -t all -o kSqueueFormat` (every job Slurm still
// knows, any state, any partition; a user sees what Slurm lets them) under
// `timeout`, at most `seconds`.  asked = false with the reason if squeue is
// missing, fails or times out.
SlurmJobs ask_slurm(double seconds);

// The job still exists and can hold data on its nodes: pending, running,
// completing, suspended... (not COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
bool slurm_state_is_live(std::string_view state);

}  // namespace dlstage
