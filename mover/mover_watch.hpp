// The watch a salloc or srun keeps on the mover jobs its job waits for
// (two-hop staging).  sbatch sets --kill-on-invalid-dep=yes, so Slurm
// ends a batch job whose mover job ended without a copy; salloc and srun
// have no such option, and their job would stay pending for ever
// (DependencyNeverSatisfied) when the mover job is cancelled before it
// runs, loses its node, or is ended by anything that stops its own
// `dlstage stage` from ending its waiters (launch/mover_outcome).  So the
// client starts `dlstage watch-movers` beside itself (as the user): it
// asks Slurm for the mover jobs' states every few seconds, ends the jobs
// waiting for one that ended without a copy (mover::end_waiting_jobs: the
// reason in their comment), says when one is held, and exits once every
// mover job has copied (or Slurm has forgotten it), or once its client is
// gone.  Once the client is gone, a mover job it submitted that no job
// waits for is cancelled: srun calls no SPANK exit hook when Slurm refuses
// its job, an interrupted salloc or srun gives its job up, and a job ended
// for one mover job leaves the others it waited for.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "lib/sys/process.hpp"

namespace dlstage::mover {

struct WatchedMover {
    std::string mover_id;
    std::string dataset;
    bool submitted = false;  // by this client, for this job
};

// "M:NAME" ("M:NAME:new" when submitted) as the client passes it; throws
// Error when it is not that.
WatchedMover parse_watched(const std::string& arg);
std::string watched_arg(const WatchedMover& mover);

struct WatchTiming {
    std::chrono::milliseconds ask_every{std::chrono::seconds(5)};  // squeue, bounded in time itself
    // After a mover job ended without a copy (its waiters ended): how long
    // the client may take to see its job ended and exit.
    std::chrono::milliseconds client_leaves{std::chrono::seconds(60)};
};

// `client`: the salloc or srun (lib/sys/process's ProcessWatch).  Returns
// when every mover has
// copied or is gone from Slurm, or the client has ended (then cancels the
// submitted movers no job waits for, after one ended without a copy too).
// `say` gets the lines the user reads (without the "dlstage: " prefix).
void watch_movers(std::vector<WatchedMover> movers, const ProcessWatch& client, const WatchTiming& timing,
                  const std::function<void(const std::string&)>& say);

// A mover job submitted for a job that is not there (refused, or given
// up): cancelled unless another job waits for it, with a line for the
// user.  For the clients' exit hook and the watch alike.
void give_up_mover(const WatchedMover& mover, const std::function<void(const std::string&)>& say);

}  // namespace dlstage::mover
