// Creating and removing per-job directories inside a storage tier, safely
// from root code.
//
// The prolog and epilog run as root, but users control what lies below their
// job directory and may plant symlinks or mount points there.  So nothing here
// follows a symlink, acts outside the tier root or crosses into another file
// system: every path is walked component by component from an fd of the tier
// root with O_NOFOLLOW, and every action is an *at() call relative to an fd.
//
// Paths given to these functions ("dir") must be absolute, strictly below the
// tier root ("root"), and have no empty, "." or ".." components; anything else
// is refused, never normalised.  Only the components above the tier root are
// trusted (they may be symlinks the admin set up, such as /var/run -> /run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage {

// Preparing a job's directory in a tier.
struct PrepareResult {
    // UserProblem: something below the tier root is not as it must be (a
    // symlink, a file, another user's directory, a mount point) or the path
    // is malformed: fail the job, not the node.
    // BrokenTier: the tier root itself is unusable or the tier refuses to
    // create a directory (read-only, full): a problem of the node.
    enum class Status { Ready, UserProblem, BrokenTier };
    Status status = Status::Ready;
    std::string message;  // one line for UserProblem / BrokenTier
};

// Makes `dir` exist as a directory owned by uid:gid with mode 0700, empty if
// it was created, reused (mode reset to 0700) if it already belongs to uid,
// e.g. for a requeued job.
// - root: must be a real directory; if it is missing but its parent exists (a
//   fresh tmpfs after a reboot) it is created, mode 0755, owned by the caller.
// - components between root and the leaf: created if missing, mode 0755,
//   owned by the caller; existing ones must be real directories.
// If the leaf cannot be given to uid:gid (fchown needs root when uid is not
// the caller's) that is a UserProblem naming the errno, and a leaf created by
// this call is removed again so that a retry starts from scratch.
PrepareResult prepare_job_dir(const std::string& root, const std::string& dir, uid_t uid, gid_t gid);

struct RemoveResult {
    std::uint64_t removed = 0;          // entries removed (files, links, dirs, incl. dir itself)
    std::vector<std::string> problems;  // one line each; empty = complete success
    bool ok() const { return problems.empty(); }
};

// Removes `dir` and everything in it; usable by root (epilog) and by the user
// (stager cleaning up partial data).
// - A missing dir (or missing root) is success with removed = 0, so calling it
//   again is harmless.
// - A component of dir (between root and dir, dir included) that is a symlink,
//   not a directory or on another file system: nothing is removed, a problem
//   is reported.
// - Inside the tree, symlinks are unlinked and never followed; directories on
//   another file system (mount points) are left in place with a problem; an
//   entry that cannot be removed is reported and the walk goes on.
// - Directories the caller owns but cannot write or search (read-only trees
//   extracted from an archive) are made 0700 first so their content can go.
// - Depth is unbounded but open fds are not: at most kMaxOpenLevels
//   directories are held open; shallower ones are closed and re-entered
//   through ".." on the way back up, after checking (st_dev, st_ino) that it
//   is the very directory that was left; if it is not (the tree was moved
//   while being removed), the walk stops with a problem.
RemoveResult remove_tree_within(const std::string& root, const std::string& dir);

struct DetachResult {
    bool detached = false;  // something was mounted on dir and is now detached
    std::string problem;    // one line; empty = success
};

// Lazily unmounts (MNT_DETACH) what is mounted on `dir`, as the epilog does
// for a job's squashfs mounts.  dir is walked like remove_tree_within; its
// last component is never followed (UMOUNT_NOFOLLOW), so a symlink planted
// there unmounts nothing.  Nothing mounted, or nothing there, is success
// with detached = false.  Works for FUSE mounts root cannot stat (another
// user's, EACCES; or one whose server died, ENOTCONN).  Needs CAP_SYS_ADMIN.
DetachResult detach_mount_within(const std::string& root, const std::string& dir);

// How many directory levels remove_tree_within keeps open at once.
inline constexpr std::size_t kMaxOpenLevels = 64;

}  // namespace dlstage
