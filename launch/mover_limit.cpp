#include "launch/mover_limit.hpp"

#include "job/slurm_jobs.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "mover/mover_job.hpp"
#include "policies/two_hop.hpp"

extern char** environ;

namespace dlstage::launch {

MoverLimitWatch::MoverLimitWatch(const Config& config, std::string job_id)
    : state_dir_(config.site.state_dir), job_id_(std::move(job_id)), started_(std::time(nullptr)),
      ticker_(std::chrono::seconds(1), [this] { tick(); })
{
}

// The stager's rank 0 records its progress (stager/steps/stage_steps) from
// its first bytes on: a record of this run with bytes done.
bool MoverLimitWatch::copy_moved_on() const
{
    for (const UserRecordFile& file : read_user_records(state_dir_, job_id_, UserRecord::Progress)) {
        const auto time = file.record["time"].value<std::int64_t>();
        const auto bytes = file.record["bytes_done"].value<std::int64_t>();
        if (time && bytes && *time >= started_ && *bytes > 0)
            return true;
    }
    return false;
}

void MoverLimitWatch::tick()
{
    const std::time_t now = std::time(nullptr);
    if (requeued_ || ran_out_ || now < next_look_)
        return;
    const std::vector<std::string> env = mover::submit_environment(environ);
    const auto clock = ask_job_clock(job_id_, mover::kSlurmTimeout, &env);
    if (!clock) {
        next_look_ = now + 10;  // squeue did not answer, or no limit: ask again
        return;
    }
    const policy::MoverClock facts{clock->limit, clock->left, copy_moved_on(), clock->state == "RUNNING"};
    switch (policy::mover_at_limit(facts)) {
    case policy::AtLimit::Wait: next_look_ = now + policy::next_look(facts); return;
    case policy::AtLimit::RunOut:
        ran_out_ = true;
        try {
            mover::mark_ending(job_id_, "its time limit comes with nothing copied in this run");
        } catch (const Error&) {
            // A job submitted meanwhile waits for it, and is ended with it.
        }
        say("this mover job wrote nothing of its copy in its time limit (" + std::to_string(clock->limit / 60) +
            " min): at the limit it ends, and so do the jobs waiting for it; ask your site admins for a "
            "longer [mover] time_limit");
        return;
    case policy::AtLimit::Requeue:
        requeued_ = true;  // before Slurm ends the run, which the caller sees first
        try {
            mover::requeue_job(job_id_);
            say("this mover job is requeued " + std::to_string(clock->left) + " s before its time limit (" +
                std::to_string(clock->limit / 60) +
                " min): its next run goes on from the copy, and the jobs waiting for it wait for that");
        } catch (const Error& e) {
            requeued_ = false;
            next_look_ = now + 5;  // once more while there is time
            if (!told_failure_)
                say(std::string(e.what()) + ": at its time limit the jobs waiting for this mover job are ended");
            told_failure_ = true;
        }
        return;
    }
}

}  // namespace dlstage::launch
