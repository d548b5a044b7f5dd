#include "status/mover_rows.hpp"

#include "job/identity.hpp"
#include "job/job_records.hpp"
#include "policies/slurm_states.hpp"

namespace dlstage {

namespace {
// The mover job's row for the dataset, from its records; nothing before
// its prolog ran.
std::optional<StatusRow> mover_row(const std::string& state_dir, const mover::MoverWait& wait, const SlurmJobs& slurm)
{
    const JobRecords records = read_job_records(state_dir, wait.mover_id);
    if (records.empty())
        return std::nullopt;
    for (StatusRow& row : status_rows(records, slurm))
        if (row.dataset == wait.dataset)
            return row;
    return std::nullopt;
}

// A waiting job's state and reason from its mover job's.
void follow_mover(StatusRow& row, const std::string& state_dir, const mover::MoverWait& wait, const SlurmJobs& slurm)
{
    const std::string mover = "mover job " + wait.mover_id;
    const SlurmJob* job = slurm.find(wait.mover_id);
    const std::optional<StatusRow> copy = mover_row(state_dir, wait, slurm);
    if (copy && copy->state == StagingState::Failed) {
        row.state = StagingState::Failed;
        row.reason = mover + " failed: " + copy->reason + "; this job never starts: scancel " + wait.job_id;
        return;
    }
    if (copy && copy->state == StagingState::Staging) {
        row.bytes_total = copy->bytes_total;
        row.bytes_done = copy->bytes_done;
        row.files = copy->files;
        row.elapsed_s = copy->elapsed_s;
        row.bytes_per_s = copy->bytes_per_s;
        row.eta_s = copy->eta_s;
        row.reason = "waits for " + mover + ", copying to " + copy->tier;
        return;
    }
    const std::string state = job ? job->state : "gone";
    if (job && (job->state == "PENDING" || job->state == "CONFIGURING" || job->state == "RUNNING" ||
                job->state == "COMPLETED" || job->state == "COMPLETING"))
        row.reason = "waits for " + mover + " (" + job->state +
                     (job->state == "PENDING" && !wait.mover_reason.empty() ? ": " + wait.mover_reason : "") + ")";
    else if (slurm.asked && job) {
        row.state = StagingState::Failed;
        row.reason = mover + " ended " + state + " without a copy; this job never starts: scancel " + wait.job_id;
    } else if (slurm.asked)  // forgotten by Slurm, which then counts the dependency as met
        row.reason =
            "waits for " + mover + " (gone from Slurm: this job starts, and stages from the copy if there is one)";
    else
        row.reason = "waits for " + mover;
}
}  // namespace

std::vector<StatusRow> mover_wait_rows(const std::string& state_dir, const std::vector<mover::MoverWait>& waits,
                                       const std::set<std::string>& recorded, const SlurmJobs& slurm)
{
    std::vector<StatusRow> rows;
    for (const mover::MoverWait& wait : waits) {
        if (recorded.count(wait.job_id))
            continue;
        StatusRow row;
        row.job_id = wait.job_id;
        row.user = wait.user;
        if (const auto uid = uid_of(wait.user))
            row.uid = static_cast<std::int64_t>(*uid);
        row.dataset = wait.dataset;
        row.tier = wait.tier.empty() ? "-" : wait.tier;
        if (wait.failed) {
            row.state = StagingState::Failed;
            row.reason = "mover job " + wait.mover_id + " failed: " + wait.reason;
        } else if (wait.state == "PENDING") {
            follow_mover(row, state_dir, wait, slurm);
        } else {
            // Ended by Slurm (sbatch's kill-on-invalid-dep) or by hand; the
            // mover job's own end says why, while Slurm remembers it.
            const SlurmJob* mover = slurm.find(wait.mover_id);
            row.state = StagingState::Failed;
            row.reason = "ended " + wait.state + " while it waited for mover job " + wait.mover_id +
                         (mover && mover->state != "COMPLETED" && policy::slurm_state_has_ended(mover->state)
                              ? ", which ended " + mover->state + " without a copy"
                              : "");
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace dlstage
