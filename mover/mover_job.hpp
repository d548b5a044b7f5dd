// Mover jobs (two-hop staging): a job the user submits, through dlstage,
// on the site's mover partition, whose nodes see a reach = "mover"
// dataset's source.  It stages the dataset to its shared tier `via` with
// dlstage's own --stage-data (the prolog, the stager and its shared-copy
// lock as for any job), and the user's jobs wait for it with Slurm's
// dependencies (afterok).  Here: finding a user's mover job, submitting
// one, and ending the jobs that wait for one that failed.  Every Slurm
// command runs as the caller, bounded in time.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/config_model.hpp"
#include "job/slurm_jobs.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

// Seconds a Slurm command (sbatch, squeue, scontrol, scancel) may take.
inline constexpr int kSlurmTimeout = 30;

// "dlstage-mover-NAME": how a user's mover job for a dataset is found.
std::string mover_job_name(const std::string& dataset);

// Where the mover job's output goes: .mover-NAME.out in the user's
// directory of the via tier (made by the mover job's prolog).
std::string mover_output_path(const Tier& via, const std::string& dataset, const std::string& user);

// The environment a mover job is submitted with: `environ` without
// Slurm's input and job variables (SBATCH_*, SALLOC_*, SRUN_*, SLURM_*
// except SLURM_CONF, SPANK_*), so that neither what the user set for
// their own job nor the variables of a job we run in change the mover's.
std::vector<std::string> submit_environment(const char* const* environ);

// sbatch's argv for a user's mover job of `dataset` (pure).
std::vector<std::string> mover_sbatch_argv(const MoverSettings& mover, const Dataset& dataset,
                                           const std::string& output);

// squeue's "%A" lines: job ids; an unreadable line is an error.
std::vector<std::string> parse_job_ids(std::string_view squeue);

// squeue's "%A|%E" lines: the jobs whose dependency names mover_id
// ("afterok:123(unfulfilled)", "afterok:123_*(failed)").
std::vector<std::string> parse_waiting_jobs(std::string_view squeue, const std::string& mover_id);

// The caller's mover jobs for `dataset` that are queued or running
// ("ID STATE" each, e.g. "4242 RUNNING", and " (ending without a copy)"
// after one marked so: mark_ending), for status; throws Error when
// squeue does not answer.
std::vector<std::string> live_mover_jobs(const std::string& dataset);

struct MoverJob {
    std::string job_id;
    bool submitted = false;  // false: one already queued or running
};

// The user's mover job for `dataset`: one already pending or running, else
// a new one.  Two submits at once on one host take turns (a lock of the
// user's); on two hosts both may submit one, and each then keeps the
// oldest of the dataset's live mover jobs, cancelling its own if that is
// another (dedupe after submit).
// Throws Error with one line naming what failed.
MoverJob ensure_mover(const Config& config, const Dataset& dataset, const std::string& user);

// The mover partition's nodes (job/slurm_nodes), asked bounded in time;
// throws Error naming why not (Slurm does not answer, or its answer cannot
// be read).
std::vector<policy::PartitionNode> mover_partition_nodes(const std::string& partition);

// Whether [mover] asks each node for no more than the mover partition's
// nodes have (policy::mover_fits_nodes, over what sinfo says); throws
// Error when Slurm cannot be asked.
policy::Verdict mover_settings_fit(const MoverSettings& mover);

// A mover job that failed: every job of the caller's that waits for it
// gets a comment naming the mover job and `reason`, and is cancelled (a
// job waiting for a failed afterok never starts).  How many it ended.
std::size_t end_waiting_jobs(const std::string& mover_id, const std::string& dataset, const std::string& reason);

// A job as `scontrol show job -o` shows it now: JobState= and Restarts=
// (how often Slurm requeued it).
struct JobNow {
    std::string state;  // RUNNING, COMPLETING, TIMEOUT, CANCELLED, ...
    int restarts = 0;
};
std::optional<JobNow> job_now_in(std::string_view scontrol);

// Asks scontrol; nothing when it did not answer.
std::optional<JobNow> job_now(const std::string& job_id);

// Marks a mover job of the caller's as ending without a copy (its
// comment, kMoverEndingComment + reason): a job submitted from then on
// gets another mover job rather than wait for this one.
void mark_ending(const std::string& mover_id, const std::string& reason);

// Puts a job of the caller's back in the queue (scontrol requeue): Slurm
// ends its run and starts it again later, under the same id.
void requeue_job(const std::string& job_id);

// Cancels a job (a mover job submitted for a job that was refused after all).
void cancel_job(const std::string& job_id);

// A mover job submitted for a job Slurm then refused (sbatch's, salloc's
// or srun's submission failed after the plugin's checks: a partition or
// dependency Slurm rejects), or given up while it waited: cancelled when
// it is still queued or running and no job of the caller's waits for it.
// True when it was cancelled.  Throws Error when squeue does not answer.
bool cancel_unless_awaited(const std::string& mover_id);

// Slurm's state and reason of each job of `ids` (job/slurm_jobs), asked
// with the environment a mover job is submitted with.
std::optional<std::map<std::string, JobState>> ask_job_states(const std::vector<std::string>& ids,
                                                              std::string& problem);

}  // namespace dlstage::mover
