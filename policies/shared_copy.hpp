// A copy in a shared tier (one for all nodes, kept across jobs): whether a
// job may use the copy it finds, must repair it or must stage it again, and
// when another job's lock on it may be broken.  Facts in, decision out; the
// stager gathers the facts (stager/tiers/shared_tier.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// Whether a copy of an earlier state of the source can be brought up to
// the source's present state file by file: a plain copy (mode = "copy",
// not unpacked) on a tier that keeps its source's mtimes (not purged by
// mtime), so that the copy's stat, and its list against the plan now,
// tell every file changed since.
bool copy_refreshable(Mode mode, const Tier& tier);

// What the stager found about a copy.
struct CopyFacts {
    bool has_record = false;   // .ready-NAME.toml readable and whole
    bool same_source = false;  // its source identity equals the source's now
    // Not the same source, but a copy (mode = "copy", of this mode) that
    // keeps its source's mtimes: checked against the source as it is now,
    // each changed, new or removed file shows (another size or mtime,
    // missing, added), so only those are fetched or removed.
    bool refreshable = false;
    // ... and the entries that changed type (a file now a directory, a
    // symlink now a file) or a directory's mode: a repair makes neither.
    std::uint64_t kind_changes = 0;
    bool has_listing = false;      // the list of what the copy holds
    bool repairable = false;       // mode = "copy": each missing file can be fetched alone
    std::uint64_t entries = 0;     // entries the copy must hold
    std::uint64_t missing = 0;     // not there, or not of their type
    std::uint64_t wrong_size = 0;  // files of another size (truncated by a purge, or changed)
    // Entries (the copy's directory included) that are not the user's: only
    // someone else can have made them, in a directory its owner had opened
    // to others (chmod 0777, a group-writable tree); what they hold is not
    // what the source held, whatever their sizes say.
    std::uint64_t foreign = 0;
    // Entries the copy holds that its list does not (a job wrote them):
    // removed, in any mode, since nothing need be fetched.
    std::uint64_t added = 0;
};

enum class CopyAction { Reuse, Repair, Stage };

struct CopyDecision {
    CopyAction action = CopyAction::Stage;
    std::string reason;  // one line for the job output
};

CopyDecision decide_copy(const CopyFacts& facts);

// What a staging finds of an earlier attempt at the same copy that did
// not finish (its job reached its time limit, was requeued, cancelled or
// lost its node): its partial copy and the record of what it copies.
struct PartialFacts {
    bool partial = false;      // .partial-NAME: a directory of the user's
    bool has_record = false;   // .resume-NAME.toml readable and whole
    bool same_source = false;  // its identity equals the source's now
    // The record lists what was walked so far instead (a first copy staged
    // while its source was walked: stager/steps/segment_transfer), each entry
    // compared with the source's now; kind_changes: entries of another
    // type, or directories of another mode, among them.
    bool walked = false;
    std::uint64_t kind_changes = 0;
    bool same_mode = false;  // ... copied the same way
    // copy_refreshable: a file's size and mtime (the source's, set once its
    // last byte is written) tell a whole file from one cut off mid-way.
    bool refreshable = false;
    std::string began_by;  // the job that began it
};

// Allowed: go on from what the partial copy holds (each file checked by
// size and mtime; the rest fetched).  Refused with the reason it is staged
// whole (empty when there is nothing to go on from).
Verdict may_resume(const PartialFacts& facts);

// Whether a change to a copy is made beside it, as a new copy that the
// record then names, instead of in it: when the change rewrites or
// removes what a job reading the copy in place may still open (files
// fetched again over changed ones, entries removed, the copy staged
// again) and such a job runs, or Slurm did not say.  Fetching back only
// what is missing (the purge took it) changes nothing a reader can open,
// and is done in place.
struct ChangeFacts {
    bool rewrites = false;
    std::uint64_t live_readers = 0;  // jobs that run and read the copy in place
    bool readers_known = true;       // Slurm answered
};
bool change_beside(const ChangeFacts& facts);

// Whether an earlier copy (not the one the record names) may be removed:
// no job that reads it runs, as Slurm said.
bool old_copy_may_go(std::uint64_t live_readers, bool readers_known);

// Who holds a lock on a copy, and what the waiter can tell about them.
struct LockFacts {
    std::string holder_job, holder_host;
    long holder_pid = 0;
    std::string my_job, my_host;
    std::optional<bool> holder_alive;    // kill(pid, 0) on the holder's host: known only there
    std::optional<bool> job_running;     // Slurm's view of holder_job; nothing when Slurm did not answer
    std::int64_t silent_s = 0;           // seconds since the holder's last heartbeat
    std::int64_t silence_limit_s = 300;  // a live holder beats every few seconds
    // The lock file's owner and the waiter's uid: only the user's own jobs
    // take a lock in their directory, so one of someone else's (planted
    // while the directory was open to others) holds nothing.
    long file_uid = -1, my_uid = -1;
};

// Allowed: the lock is stale and may be broken; the reason says why.
// Refused: the holder is (or may be) at work; the reason says who it is.
Verdict lock_is_stale(const LockFacts& facts);

}  // namespace dlstage::policy
