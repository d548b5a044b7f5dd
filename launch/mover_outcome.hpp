// A mover job's end as its `dlstage stage` sees it (two-hop staging): when
// the copy fails, or the job is cancelled or reaches its time limit while
// copying (Slurm sends SIGTERM, then SIGKILL after KillWait), the jobs
// that wait for it are ended with the reason in their comment
// (mover::end_waiting_jobs): a job waiting on a failed afterok would
// otherwise stay pending for ever (salloc and srun have no
// --kill-on-invalid-dep).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "facts/stage_item.hpp"
#include "launch/stager_step.hpp"

namespace dlstage::launch {

// Is this job, on `partition`, a mover job for any of items (a reach =
// "mover" dataset it reads itself, to that dataset's via tier)?
bool is_mover_job(const Config& config, const std::vector<StageItem>& items,
                  const std::optional<std::string>& partition);

// A mover job's staging failed (or was ended by SIGTERM: launch/job_end): unless Slurm
// requeued it (it runs again), the jobs waiting for it are ended with the
// reason (`ran_out`: its time limit came with nothing copied in this run,
// launch/mover_limit).  Lines for the job's output (how many were ended,
// or why not).
std::vector<std::string> mover_ended(const Config& config, const StagerStep& step, const LauncherReport& report,
                                     const std::vector<StageItem>& items, bool ran_out);

}  // namespace dlstage::launch
