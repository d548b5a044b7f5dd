// What `dlstage gc` may remove, per candidate it found on a node: pure
// decisions over facts gathered by the caller (Slurm's list of jobs, a
// directory's times, mounts), each a Verdict whose reason is the line
// --dry-run prints and the log keeps.
//
// The one rule above all: never a running job's data.  A job Slurm still
// lists in any state but a final one (pending, running, suspended,
// completing, ...) keeps everything, and so does a job with processes on
// this node whatever slurmctld says; a job Slurm could not be asked about
// keeps everything too (gc never guesses).  What an ended job left (its
// directory with any .partial-/.incoming- leftovers inside, a shared
// tier's half-removed claim, its records) goes only once it is older than
// a grace period, so a directory the prolog of a job too new for Slurm's
// answer is just making is never touched.
//
// Cache entries (tiers with cleanup = "cache") have their own rule: their
// facts (in use, idle, next in line over the watermark) come from
// tier/cache_measure and policies/cache_eviction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "policies/verdict.hpp"

namespace dlstage::policy {

enum class GcKind {
    JobDir,      // a tier's job directory (cleanup = "job-end")
    Claim,       // a shared tier's JOB.removing-NODE an epilog did not finish
    Records,     // state_dir/jobs/JOB
    CacheEntry,  // a user's cached dataset in a cleanup = "cache" tier
};

// What Slurm said of the candidate's job.
enum class JobState {
    Present,  // listed in a state that is not final: the job may still use it
    Ended,    // not listed, or listed as completed, failed, cancelled, ...
    Unknown,  // Slurm could not be asked
};

struct GcFacts {
    GcKind kind = GcKind::JobDir;
    JobState job = JobState::Unknown;  // not for cache entries
    bool processes_here = false;       // the job still has processes on this node (its slurmstepd)
    // Seconds from the candidate's last change (its mtime or ctime,
    // whichever is later) to the moment Slurm was asked; negative when it
    // changed after.  Not known for a directory something is mounted on:
    // the mount's times are not the directory's, and only an ended job's
    // leftovers carry mounts by then.
    std::int64_t age = 0;
    bool mounted = false;
    // Cache entries only.
    bool in_use = false;          // a running job has it (its reference or lock)
    bool over_watermark = false;  // the tier is above its high watermark, this entry next in line
    std::int64_t idle = 0;        // seconds since a job last used it
    bool unfinished = false;      // no ready record: a staging that did not finish left it
    bool moved_aside = false;     // a user's cache directory a prolog moved aside as untrusted
    bool measured = true;         // false: not measured in time, its size unknown
    // A running job of the entry's owner uses this tier on the node, by
    // root's records and Slurm (cache_use_holds): its stager may be writing
    // an unfinished entry.
    bool owner_busy = false;
    // (age, above: for an aside, from when it was moved, as its name says;
    // else from the newest change of anything in the entry)
};

struct GcSettings {
    std::int64_t grace = 300;  // seconds (site.gc_grace)
    int records_days = 30;     // site.gc_records_days; 0: records are never removed
    int cache_idle_days = 0;   // for cache entries; 0: only the watermark evicts
};

// A job in this state as squeue names it (%T: RUNNING, COMPLETED, ...):
// only the final states are Ended; every other state, one a later Slurm
// adds too, is Present, so an unknown word keeps data rather than losing it.
JobState job_state_from_slurm(std::string_view state);

// Whether a job's recorded use of a node cache entry still holds: Slurm
// lists the job as started and not ended (running, completing, suspended:
// `started`), it has processes here, or root's record of the use is
// younger than the grace at the moment Slurm was asked (`record_age` may be
// negative: written after).  The last is for a job that started around the
// question: its prolog records the use under the node's cache lock, Slurm's
// answer may predate it.  A pending job (requeued, held) uses nothing: its
// next prolog records its use again.
bool cache_use_holds(bool started, bool processes_here, std::int64_t record_age, const GcSettings& settings);
// Whether a job in this squeue state (%T) has started and not ended.
bool job_started(std::string_view slurm_state);

// Whether gc may remove the candidate, and why (one line).
Verdict gc_may_remove(const GcFacts& facts, const GcSettings& settings);

// "3 d", "5 h", "12 min", "40 s": an age in a reason.
std::string age_text(std::int64_t seconds);

}  // namespace dlstage::policy
