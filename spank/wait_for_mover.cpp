#include "spank/wait_for_mover.hpp"

#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "mover/hop_one.hpp"
#include "mover/mover_watch.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::spank {

namespace {
// The mover jobs this client submitted, for settle_movers at its exit.
std::vector<mover::WatchedMover> g_submitted;

struct Waits {
    std::vector<std::string> movers;     // every mover job the job waits for
    std::vector<std::string> submitted;  // the ones submitted for it
    std::vector<mover::WatchedMover> watched;
    std::vector<std::string> lines;     // what the user reads once the job is set to wait
    std::vector<std::string> comments;  // "waits for mover job M (NAME)"
};

// salloc and srun: nothing in Slurm ends their job when its mover job
// ends without a copy before its own `dlstage stage` could (cancelled while
// pending, its node lost): the watch beside the client does.  It also
// gives up the movers this client submitted once the client is gone
// (srun calls no exit hook when Slurm refuses its job).
void watch_beside_client(SpankApi& api, const std::string& dlstage_path, const Waits& waits)
{
    std::vector<std::string> argv = {dlstage_path, kWatchMoversCommand, "--client", std::to_string(::getpid())};
    for (const mover::WatchedMover& mover : waits.watched)
        argv.push_back(mover::watched_arg(mover));
    if (!api.start(argv))
        api.info("cannot start " + dlstage_path + " " + kWatchMoversCommand +
                 ": if a mover job ends without a copy before it runs, scancel this job yourself");
}

// True when Slurm itself ends the job if a mover job fails (sbatch).
bool make_job_wait(SpankApi& api, const Waits& waits)
{
    std::string merged;
    policy::require(policy::dependency_with_movers(waits.movers, api.client_option("dependency"), merged));
    if (!api.set_client_option("dependency", merged))
        throw Error("cannot make this job wait for its mover job (this Slurm does not let dlstage set "
                    "--dependency): submit it with --dependency=" +
                    merged);
    // sbatch only (salloc and srun have no such option): a failed mover
    // ends the job rather than leaving it pending for ever.  The mover
    // job ends them all itself when it can (mover::end_waiting_jobs).
    const bool slurm_ends_it = api.set_client_option("kill-on-invalid-dep", "yes");
    std::string comment = kWaitsComment + join(waits.comments, ", ");
    if (const auto theirs = api.client_option("comment"))
        comment = *theirs + "; " + comment;
    api.set_client_option("comment", comment);
    return slurm_ends_it;
}
}  // namespace

void wait_for_movers(SpankApi& api, const Config& config, const std::vector<StageItem>& items, const std::string& user,
                     const std::optional<std::string>& partition, const std::string& dlstage_path)
{
    Waits waits;
    // sbatch/srun --test-only submit nothing: neither does dlstage.
    const bool test_only = api.client_option("test-only").value_or("unset") == "set";
    try {
        for (const StageItem& item : items) {
            const Dataset& dataset = item.dataset;
            if (policy::reads_source_here(dataset, partition, config.mover))
                continue;
            policy::require(policy::hop_supported(dataset, item.tier));
            if (test_only) {
                api.info(dataset.name + ": --test-only: no mover job is submitted (its copy in " + dataset.via +
                         " is not looked at)");
                continue;
            }
            const mover::HopOne hop = mover::prepare_copy(config, dataset, user);
            if (hop.copy_usable) {
                api.info(dataset.name + ": its copy in " + dataset.via + " is current: no mover job needed");
                continue;
            }
            const mover::MoverJob& job = hop.job;
            waits.movers.push_back(job.job_id);
            waits.watched.push_back({job.job_id, dataset.name, job.submitted});
            if (job.submitted) {
                waits.submitted.push_back(job.job_id);
                g_submitted.push_back(waits.watched.back());
            }
            waits.comments.push_back(job.job_id + " (" + dataset.name + ":" + item.tier.name + ")");
            waits.lines.push_back(dataset.name + ": " + hop.why + ": " +
                                  (job.submitted ? "mover job " + job.job_id + " copies it there"
                                                 : "mover job " + job.job_id + " is already copying it there") +
                                  "; this job waits for it");
        }
        if (!waits.movers.empty() && !make_job_wait(api, waits))
            watch_beside_client(api, dlstage_path, waits);
    } catch (...) {
        for (const std::string& id : waits.submitted)
            try {
                mover::cancel_job(id);
            } catch (const Error&) {
                // It finds the copy it makes useful to the next job anyway.
            }
        g_submitted.clear();
        throw;
    }
    for (const std::string& line : waits.lines)
        api.info(line);
}

void settle_movers(SpankApi& api)
{
    for (const mover::WatchedMover& mover : g_submitted)
        mover::give_up_mover(mover, [&api](const std::string& line) { api.info(line); });
    g_submitted.clear();
}

}  // namespace dlstage::spank
