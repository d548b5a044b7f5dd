#include "spank/wait_for_mover.hpp"


#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "mover/hop_one.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::spank {

namespace {
struct Waits {
    std::vector<std::string> movers;     // every mover job the job waits for
    std::vector<std::string> submitted;  // the ones submitted for it
    std::vector<std::string> lines;      // what the user reads once the job is set to wait
    std::vector<std::string> comments;   // "waits for mover job M (NAME)"
};

void make_job_wait(SpankApi& api, const Waits& waits)
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
    api.set_client_option("kill-on-invalid-dep", "yes");
    std::string comment = kWaitsComment + join(waits.comments, ", ");
    if (const auto theirs = api.client_option("comment"))
        comment = *theirs + "; " + comment;
    api.set_client_option("comment", comment);
}
}  // namespace

void wait_for_movers(SpankApi& api, const Config& config, const std::vector<StageItem>& items, const std::string& user,
                     const std::optional<std::string>& partition)
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
            if (job.submitted)
                waits.submitted.push_back(job.job_id);
            waits.comments.push_back(job.job_id + " (" + dataset.name + ":" + item.tier.name + ")");
            waits.lines.push_back(dataset.name + ": " + hop.why + ": " +
                                  (job.submitted ? "mover job " + job.job_id + " copies it there"
                                                 : "mover job " + job.job_id + " is already copying it there") +
                                  "; this job waits for it");
        }
        if (!waits.movers.empty())
            make_job_wait(api, waits);
    } catch (...) {
        for (const std::string& id : waits.submitted)
            try {
                mover::cancel_job(id);
            } catch (const Error&) {
                // It finds the copy it makes useful to the next job anyway.
            }
        throw;
    }
    for (const std::string& line : waits.lines)
        api.info(line);
}

}  // namespace dlstage::spank
