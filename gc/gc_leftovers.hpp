// What `dlstage gc` finds on a node and how it removes it: the job
// directories of cleanup = "job-end" tiers (and a shared tier's claims,
// JOB.removing-NODE, that an epilog did not finish), and the job record
// directories in state_dir.  Whether one may go is policies/gc's to say;
// this file only looks and removes, the way the epilog does:
// - tiers are walked with tier/safe_fs's trusted walk from the tier root:
//   a root or level not owned by root and writable by others is reported
//   and skipped, never repaired; nothing is followed through a symlink,
//   nothing is entered through a mount (mounts come from mountinfo);
// - a directory is removed after detaching every mount in it, as its
//   owner below it (what its user could not remove stays, reported),
//   never leaving the tier root; a shared tier's directory only through
//   the epilog's claim (remove_tree_within_once), so that gc on several
//   nodes, and a late epilog, remove it once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/gc.hpp"

namespace dlstage {

// Leftover::where of a job's records.
inline constexpr const char* kRecordsPlace = "state_dir";

struct Leftover {
    policy::GcKind kind = policy::GcKind::JobDir;
    std::string where;  // the tier's name, or kRecordsPlace
    std::string root;   // the tier root (state_dir): nothing above it is touched
    std::string path;   // the directory
    std::string job_id;
    std::string job_name;      // its job directory's name (a claim's without ".removing-NODE")
    bool shared = false;       // in a shared tier: removed through a claim
    bool mounted = false;      // something is mounted on it (its times are the mount's)
    std::int64_t changed = 0;  // its mtime or ctime, whichever is later (records: mtime, claims: both)
};

struct Found {
    std::vector<Leftover> leftovers;
    std::vector<std::string> skipped;  // one line each: a level not trusted, a directory not readable
};

// The job directories of a cleanup = "job-end" tier on this node (`node`
// for %n), and on a shared tier the claims left by epilogs.  A tier root
// that does not exist holds nothing.
Found find_tier_leftovers(const Tier& tier, const std::string& node);

// state_dir/jobs/JOB for every job id there (Records), and the claims a
// gc left there, JOB.removing-NODE (Claim: the grace period protects one
// being removed right now).
Found find_job_records(const std::string& state_dir);

// Removes one leftover as described above; `node` names this node's claim.
// Gone meanwhile (another node's gc, a late epilog) is success.
RemoveResult remove_leftover(const Leftover& leftover, const std::string& node);

}  // namespace dlstage
