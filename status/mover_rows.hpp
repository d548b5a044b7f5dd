// `dlstage status` rows of jobs that wait for a mover job (two-hop
// staging), or that a failed one ended, before their prolog left any
// record: from their comment (mover/mover_waits) and the mover job's own
// records and state.  A waiting job shows the copy's progress (the mover
// job's percent, rate and ETA); an ended one why its mover failed.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "job/slurm_jobs.hpp"
#include "mover/mover_waits.hpp"
#include "status/job_status.hpp"

namespace dlstage {

// Rows for the waits of jobs not in `recorded` (those have rows of their own).
std::vector<StatusRow> mover_wait_rows(const std::string& state_dir, const std::vector<mover::MoverWait>& waits,
                                       const std::set<std::string>& recorded, const SlurmJobs& slurm);

}  // namespace dlstage
