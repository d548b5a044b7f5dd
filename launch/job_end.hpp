// How `dlstage stage` meets its job's end while the stager runs.  Slurm
// signals a job's processes (a cancel, a requeue) with SIGTERM and,
// KillWait seconds later, SIGKILL: SIGTERM only marks it here, and is
// passed on to the launcher, whose step then ends, so that `dlstage stage`
// lives to say what ended the staging (the jobs waiting for a mover job
// told) before the SIGKILL.  A time limit is told by the launcher's own
// line as it passes.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "facts/stage_item.hpp"

namespace dlstage::launch {

// From now on SIGTERM marks the job as ending and is passed on to the
// launcher, if one runs (launcher_started).
void note_job_end();

// SIGTERM came.
bool job_ending();

// The launcher now running (0: none).
void launcher_started(pid_t pid);

// Does this launcher line say that Slurm ended the step for the job's time
// limit ("slurmstepd-n1: error: *** STEP 7.0 ON n1 CANCELLED AT ... DUE TO
// TIME LIMIT ***", relayed by srun)?  Seen as it passes, before the
// launcher ends: in a batch step `dlstage stage` gets no SIGTERM of its
// own, and is killed soon after the launcher ends.
bool says_time_limit(const std::string& launcher_line);

// The line for a staging the job's time limit cut off, naming the copies
// in shared tiers that are kept for the next staging to go on from.
std::string cut_by_time_limit(const std::vector<StageItem>& items);

}  // namespace dlstage::launch
