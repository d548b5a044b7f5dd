// Creating, opening and removing per-job directories inside a storage tier,
// safely from root code.
//
// The prolog and epilog run as root, but users control what lies below
// their job directory and may plant symlinks or mount FUSE file systems
// there; and before the first job after a reboot a tier root such as
// /dev/shm/dlstage does not exist, so any user may create it first.  Hence:
// - nothing here follows a symlink below the tier root's parent, acts
//   outside the tier root or crosses into another file system: every path
//   is walked component by component from an fd, with O_NOFOLLOW, and every
//   action is an *at() call relative to an fd;
// - the tier root and every level between it and a job directory are
//   trusted only if owned by the caller (root) and writable by nobody else;
//   the prolog moves anything else aside (a rename within its parent) and
//   makes its own, the epilog and the stager refuse to use it;
// - nothing stats into a mount: whether a directory is a mount point comes
//   from /proc/self/mountinfo, and the only stat of a directory not yet
//   known to be the tier's is statx(AT_STATX_DONT_SYNC), which a FUSE file
//   system answers from the kernel's cache without asking its server.
//
// Paths given to these functions ("dir") must be absolute, strictly below
// the tier root ("root"), and have no empty, "." or ".." components;
// anything else is refused, never normalised.  Only the components above the
// tier root are the admin's and trusted as they are (they may be symlinks
// the admin set up, such as /var/run -> /run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "lib/sys/fd.hpp"
#include "lib/sys/tree_remover.hpp"
#include "tier/untrusted.hpp"

namespace dlstage {

// Preparing a job's directory in a tier (the prolog).
struct PrepareResult {
    std::string problem;               // one line; empty: the directory is ready
    int err = 0;                       // the errno behind problem, 0 if something was found as it must not be
    bool at_tier_parent = false;       // the failure is in the admin's part, above the tier root
    std::vector<std::string> repairs;  // untrusted entries moved aside, mounts detached: for the log
    Fd dir;                            // the job directory, open for reading, when ready

    bool ok() const { return problem.empty(); }
};

// Makes `dir` exist as a directory owned by uid:gid with mode 0700, empty if
// it was created, reused (mode reset to 0700) if it already belongs to uid,
// e.g. for a requeued job.
// - root and the levels between root and dir: created if missing (mode
//   0755, owned by the caller); anything there that is not a real directory
//   owned by the caller and writable by nobody else (a symlink, a file, a
//   user's directory, a FUSE mount) is detached if mounted, moved aside to
//   NAME.untrusted-TIME-PID in the same directory and replaced.
// - dir itself: a symlink, a file or another user's directory is moved
//   aside the same way (a job id used again after a reset of Slurm's state
//   may meet an old job's data); a mount on it is detached.
// If the leaf cannot be given to uid:gid (fchown needs root when uid is not
// the caller's) that is a problem naming the errno, and a leaf created by
// this call is removed again so that a retry starts from scratch.
// With Untrusted::Refuse (a state_dir is the admin's, not to be moved), an
// untrusted root or level is a problem instead; the leaf is still replaced.
PrepareResult prepare_job_dir(const std::string& root, const std::string& dir, uid_t uid, gid_t gid,
                              Untrusted untrusted = Untrusted::MoveAside);

struct OpenResult {
    Fd dir;               // open for reading, when problem is empty
    std::string problem;  // one line
};

// The job directory as the stager (the job's user) may use it: every level
// from root down to dir's parent owned by root (uid 0) and writable by
// nobody else, dir itself a directory owned by the caller, mode 0700, not a
// mount point.  Nothing is created or repaired.
OpenResult open_job_dir(const std::string& root, const std::string& dir);

// A directory in a tier that root only looks into, whoever owns it (a
// user's directory in a shared tier, for `dlstage status --dataset` run as
// root): reached like open_job_dir (every level from root down to dir's
// parent owned by root and writable by nobody else, no symlink), dir
// itself a directory on the tier's file system and not a mount point, so a
// user's stopped FUSE server cannot hang the caller.  Neither dir nor
// problem when it does not exist.
OpenResult look_into_dir(const std::string& root, const std::string& dir);

// A tier root itself, to list what is in it (`dlstage status --node`, as
// root or a user): the levels above it as the admin set them, the root
// owned by root and writable by nobody else, no symlink, open for reading.
// Neither dir nor problem when it does not exist.
OpenResult look_into_tier_root(const std::string& root);

// A directory for root's own files (state records) at or below root: root
// and every level down to dir owned by the caller and writable by nobody
// else, created (0755) if missing when `create`; anything untrusted is a
// problem, never repaired (state_dir is the admin's).
OpenResult open_trusted_dir(const std::string& root, const std::string& dir, bool create);

// Removes `dir` and everything in it; usable by root (epilog) and by the user
// (stager cleaning up partial data).
// - A missing dir (or missing root) is success with removed = 0, so calling it
//   again is harmless.
// - root and the levels down to dir's parent must be trusted (owned by the
//   caller, writable by nobody else): otherwise nothing is removed and a
//   problem is reported.
// - A component of dir (between root and dir, dir included) that is a symlink,
//   not a directory or on another file system: nothing is removed, a problem
//   is reported.
// - Inside dir: as remove_tree_on (lib/sys/tree_remover.hpp).
RemoveResult remove_tree_within(const std::string& root, const std::string& dir);

// The epilog's removal: the same, but everything below dir is removed with
// the permissions of its owner uid:gid (FsIdentity), so that root never
// removes what the job's user could not (another user's data moved into the
// job directory stays, reported); dir itself, in a root-owned level, goes
// as root once it is empty.  Needs root when uid is not the caller.
RemoveResult remove_tree_within(const std::string& root, const std::string& dir, const Owner& as);

// For a directory every node's epilog removes at once (a job's directory
// in a shared tier): dir is first renamed to `claim` in the same parent
// (a name no other node uses, e.g. with the node's name); the node whose
// rename finds it removes it, as remove_tree_within(root, dir, as) does,
// and the others find nothing to do.
RemoveResult remove_tree_within_once(const std::string& root, const std::string& dir, const Owner& as,
                                     const std::string& claim);

struct DetachResult {
    int detached = 0;                   // mounts detached (each takes those below it along)
    std::vector<std::string> problems;  // one line each; empty = success
};

// Lazily unmounts (MNT_DETACH) every mount on `dir` or below it, as the
// epilog does before removing a job directory: the mounts come from
// /proc/self/mountinfo, deepest first, and each is reached from the tier
// root's side without entering any mount on the way (a mount nested in
// another goes with the outer one).  No mount point is stat'ed or opened,
// so a FUSE server that is stopped or hostile cannot make this hang; the
// last component is never followed (UMOUNT_NOFOLLOW), so a symlink planted
// there unmounts nothing.  root and the levels to dir must be trusted as for
// remove_tree_within.  Nothing mounted, or nothing there, is success.
// Needs CAP_SYS_ADMIN.
DetachResult detach_mounts_within(const std::string& root, const std::string& dir);

}  // namespace dlstage
