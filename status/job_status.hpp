// What `dlstage status` says of each (job, dataset): its state derived from
// the job's records (job/job_records.hpp) and from what Slurm says of the
// job now (job/slurm_jobs.hpp), and which rows a `-j` list selects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job/job_records.hpp"
#include "job/slurm_jobs.hpp"

namespace dlstage {

enum class StagingState {
    Pending,   // the prolog has not run on every node, or the stager has not begun
    Staging,   // the stager is copying (percent, rate)
    Ready,     // staged on every node
    Reused,    // a shared tier's copy was reused (or repaired)
    CacheHit,  // every node's cache held it: nothing was transferred
    Failed,    // with the reason: the prolog's or the stager's
    Cleaned,   // the epilog removed the job's data
    Stale,     // the records claim data, but Slurm no longer runs the job
    Unknown,   // Slurm could not be asked whether the job still runs
};

// "pending", "staging", "ready", "reused", "cache-hit", "failed",
// "cleaned", "stale", "unknown".
const char* state_word(StagingState state);
std::optional<StagingState> state_from_word(std::string_view word);
std::vector<std::string> state_words();

struct StatusRow {
    std::string job_id;         // the job's own id: state_dir/jobs/<this>
    std::string array_job_id;   // "" unless an array task
    std::string array_task_id;  // "" unless an array task
    std::string user;           // name, or the uid as digits if it has none
    std::optional<std::int64_t> uid;
    std::string dataset = "-";
    std::string tier = "-";
    // Split over the job's nodes (--stage-data=NAME:TIER:split): each
    // node's bytes, in the job's node order; empty when whole on each.
    std::vector<std::uint64_t> shares;
    // The nodes whose cache held the dataset (a cache hit there), as the
    // stager recorded them: where the job found its data.
    std::vector<std::string> cache_hits;
    std::int64_t nodes = 0;
    std::string nodelist;  // Slurm's (n[1-3]), else the nodes of the records
    StagingState state = StagingState::Pending;
    std::string reason;  // why failed, stale or unknown; what is odd
    std::uint64_t bytes_total = 0;
    std::uint64_t bytes_done = 0;
    std::uint64_t files = 0;
    double elapsed_s = 0;  // staging time so far (or in all, once done)
    double bytes_per_s = 0;
    double eta_s = 0;
    std::int64_t updated = 0;  // the newest record's time (epoch s), 0 if unknown

    // As squeue shows it: "123_4" for an array task, else "124".
    std::string shown_id() const;
    // bytes_done of bytes_total, 0 to 100 (100 when there is nothing to copy).
    int percent() const;
};

// The rows of one job, one per dataset (from its progress records, and
// those the prolog planned that have none yet), or one row with dataset
// "-" when no dataset is known (a failure before any progress).
std::vector<StatusRow> status_rows(const JobRecords& job, const SlurmJobs& slurm);

// One item of a -j list: "123" (that job, or every task of array 123) or
// "123_4" (task 4 of array 123).
struct JobSelector {
    std::string job;
    std::string task;  // "" for all of job

    bool matches(const StatusRow& row) const;
    std::string text() const { return task.empty() ? job : job + "_" + task; }
};

// "12,13_2,14" into selectors; leading zeros dropped as Slurm does.
// Throws Error naming the item that is no job id.
std::vector<JobSelector> parse_job_list(std::string_view list);

}  // namespace dlstage
