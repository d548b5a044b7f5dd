// A mover job's own time limit, watched by its `dlstage stage` while the
// stager copies (policy::mover_at_limit): a margin before the limit it
// requeues itself when this run wrote bytes of the copy, so that the jobs
// waiting for it (afterok on its id) wait for its next run, which goes on
// from the copy, instead of being ended with it.  A run that wrote nothing
// is left to its limit, and its waiters are ended (launch/mover_outcome).
#pragma once

#include <atomic>
#include <ctime>
#include <string>

#include "config/config.hpp"
#include "lib/sys/periodic.hpp"

namespace dlstage::launch {

class MoverLimitWatch {
public:
    // Starts looking at job_id's clock (its first look at once); stops
    // when it goes.
    MoverLimitWatch(const Config& config, std::string job_id);

    // This run asked Slurm to requeue it: the job's end is Slurm's doing.
    bool requeued() const { return requeued_; }
    // The limit came with nothing copied in this run.
    bool ran_out() const { return ran_out_; }

private:
    void tick();
    bool copy_moved_on() const;

    std::string state_dir_;
    std::string job_id_;
    std::time_t started_;
    std::time_t next_look_ = 0;
    bool told_failure_ = false;  // a requeue Slurm refused is said once
    std::atomic<bool> requeued_{false};
    std::atomic<bool> ran_out_{false};
    Periodic ticker_;  // last: stops before the members it reads go
};

}  // namespace dlstage::launch
