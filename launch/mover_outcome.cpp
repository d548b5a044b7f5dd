#include "launch/mover_outcome.hpp"

#include "job/job_identity.hpp"
#include "launch/job_end.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "mover/mover_job.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::launch {

namespace {
// Does the item copy a reach = "mover" dataset to its via tier (hop 1)?
bool copies_to_via(const StageItem& item)
{
    return item.dataset.reach == Reach::Mover && item.tier.name == item.dataset.via;
}
}  // namespace

bool is_mover_job(const Config& config, const std::vector<StageItem>& items,
                  const std::optional<std::string>& partition)
{
    for (const StageItem& item : items)
        if (copies_to_via(item) && policy::reads_source_here(item.dataset, partition, config.mover))
            return true;
    return false;
}

std::vector<std::string> mover_ended(const Config& config, const StagerStep& step, const LauncherReport& report,
                                     const std::vector<StageItem>& items, bool ran_out)
{
    const std::string& job_id = step.job_id;
    std::vector<std::string> lines;
    int restarts = 0;
    try {
        restarts = static_cast<int>(parse_count(process_env(kRestartCountVar), 0, 1000000));
    } catch (const Error&) {
        // unset on a first run
    }
    // Slurm may end the job's steps before it signals this process: its
    // state tells too.  A requeued mover job runs again: its jobs wait on.
    const std::optional<mover::JobNow> now = mover::job_now(job_id);
    if (now && now->restarts > restarts)
        return {"this mover job was requeued: the jobs waiting for it wait for its next run"};
    const bool ended_by_slurm = job_ending() || (now && now->state != "RUNNING");
    const std::string reason = !ended_by_slurm ? failure_reason(config, step, report)
                               : ran_out       ? "it reached its time limit with nothing copied in it (the site's "
                                                 "[mover] time_limit is too short for this dataset)"
                               : now && now->state == "TIMEOUT"   ? "it reached its time limit"
                               : now && now->state == "CANCELLED" ? "it was cancelled"
                                                                  : "it was cancelled or reached its time limit";
    // First the mark: a job submitted from now on gets a mover job of its
    // own (mover::ensure_mover skips this one); then the jobs already waiting.
    try {
        mover::mark_ending(job_id, reason);
    } catch (const Error&) {
        // Slurm ends a job submitted meanwhile with this one (sbatch's
        // --kill-on-invalid-dep; the watch beside salloc and srun).
    }
    for (const StageItem& item : items) {
        if (!copies_to_via(item))
            continue;
        try {
            const std::size_t ended = mover::end_waiting_jobs(job_id, item.dataset.name, reason);
            if (ended > 0)
                lines.push_back(item.dataset.name + ": " + std::to_string(ended) +
                                (ended == 1 ? " job that waited" : " jobs that waited") +
                                " for this mover job ended: the copy failed");
        } catch (const Error& e) {
            lines.push_back(item.dataset.name + ": the jobs waiting for this mover job were not ended: " + e.what());
        }
    }
    return lines;
}

}  // namespace dlstage::launch
