// How `dlstage stage` meets its job's end while the stager runs.  Slurm
// signals the job's processes (a cancel, a time limit, a requeue) with
// SIGTERM and, KillWait seconds later, SIGKILL: SIGTERM only marks it here,
// and is passed on to the launcher, whose step then ends, so that `dlstage
// stage` lives to say what ended the staging (the jobs waiting for a mover
// job, a time limit) before the SIGKILL.
#pragma once

#include <optional>
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

// The line for a staging that this job's time limit cut off (Slurm says so:
// the job's state is TIMEOUT, or its reason TimeLimit while it completes),
// saying which copies are kept to go on from; nothing otherwise (or when
// squeue does not answer).
std::optional<std::string> cut_by_time_limit(const std::string& job_id, const std::vector<StageItem>& items);

}  // namespace dlstage::launch
