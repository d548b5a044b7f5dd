// Jobs that wait for a mover job, or that a failed one ended, as Slurm
// shows them: their comment says so (spank/wait_for_mover sets
// "dlstage: waits for mover job M (NAME:TIER)" at submit;
// mover::end_waiting_jobs replaces it by "dlstage: mover job M for NAME
// failed: REASON").  Before its prolog runs such a job has no records in
// state_dir: `dlstage status` shows it from these.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "job/slurm_jobs.hpp"

namespace dlstage::mover {

struct MoverWait {
    std::string job_id;
    std::string user;
    std::string state;  // Slurm's: PENDING, CANCELLED, ...
    std::string mover_id;
    std::string dataset;
    std::string tier;  // "" when the comment does not say
    bool failed = false;
    std::string reason;  // failed: why the mover job failed
    // ask_mover_waits, for a job still waiting: Slurm's reason for its
    // mover job now ("JobHeldAdmin", "Priority"; "" when not asked or None).
    std::string mover_reason;
};

// One "waits for" comment's entries ("7 (in21k:shm), 9 (far:ssd)"), or the
// failure comment: what it says of job_id (one per dataset).
std::vector<MoverWait> waits_in_comment(const std::string& comment);

// squeue's "%A|%u|%T|%k" lines: the jobs whose comment names a mover job.
// Any user sets their job's comment, newlines included: a comment can
// forge whole lines.  With `known` (the job ids of a squeue without
// comments), a wait is kept only for a job id that appears once in the
// answer and is one of those; its text is made printable.
std::vector<MoverWait> parse_mover_waits(std::string_view squeue, const std::set<std::string>* known = nullptr);

// Asks squeue (every job Slurm still remembers), bounded in time, and
// keeps the waits `slurm` (ask_slurm's answer) confirms; empty with
// `problem` set when it did not answer.
std::vector<MoverWait> ask_mover_waits(std::string& problem, const SlurmJobs& slurm);

}  // namespace dlstage::mover
