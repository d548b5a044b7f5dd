// May `dlstage stage` launch the stager a second time after a failure?
//
// Open MPI 4.1 can crash a rank inside MPI_Init when a faster peer's first
// message arrives before the rank is ready for it (seen here about once in
// 50 launches on a loaded 2-core machine; open-mpi/ompi PR #13559 describes
// the race).  Nothing was staged then, and another launch almost always
// succeeds: up to kMostLaunches in all, since a test run launches hundreds
// of stagers and one retry left a run in a few hundred failing.  srun may
// report a peer's end first (killed, or its exit once the connection to
// the crashed rank broke): a crash of any task counts.  A rank that failed
// for a reason of its own says so in a "dlstage:" line, and one killed by
// SIGKILL or SIGTERM alone (the user, Slurm, the OOM killer) was stopped on
// purpose: neither is tried again.
#pragma once

#include <string>
#include <vector>

#include "policies/verdict.hpp"

namespace dlstage::policy {

// Launches of the stager for one `dlstage stage`, at most.
constexpr int kMostLaunches = 3;

struct LaunchFailure {
    int attempt = 1;                         // 1: the first launch failed
    bool stager_spoke = false;               // some rank printed a "dlstage:" line
    std::vector<std::string> task_failures;  // srun's "NODE: task N: REASON" lines, in its order
};

// allowed: launch once more, reason says why (one line for the job output).
Verdict retry_launch(const LaunchFailure& failure);

}  // namespace dlstage::policy
