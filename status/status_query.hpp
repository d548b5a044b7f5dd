// Which rows `dlstage status` shows: the jobs, users, states and dataset
// asked for, read from the jobs' records in state_dir (status/job_status)
// with what Slurm says of them now (job/slurm_jobs).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "job/slurm_jobs.hpp"
#include "mover/mover_waits.hpp"
#include "status/job_status.hpp"

namespace dlstage {

struct StatusQuery {
    bool all = false;                    // every user's jobs
    std::vector<JobSelector> jobs;       // empty: every job's records
    std::set<std::string> users;         // empty: the caller's own (root: see all)
    std::set<StagingState> states;       // empty: any
    std::optional<std::string> dataset;  // only rows of this dataset (every user's)
};

// The rows wanted, as squeue lists jobs: by job id, an array's tasks under
// its id in task order, then by dataset.
// `waits`: jobs that wait for a mover job, or that a failed one ended
// (mover/mover_waits), shown while they have no records.
std::vector<StatusRow> find_status_rows(const std::string& state_dir, const StatusQuery& query, const SlurmJobs& slurm,
                                        const std::vector<mover::MoverWait>& waits = {});

// The selectors no row matched, for the error.
std::vector<std::string> unmatched(const std::vector<JobSelector>& jobs, const std::vector<StatusRow>& rows);

}  // namespace dlstage
