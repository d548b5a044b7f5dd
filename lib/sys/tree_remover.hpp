// Removing a directory tree symlink-safely: the epilog (root) removing a
// job directory, the stager (the user) removing what it wrote.
//
// Users control what lies in the tree and may plant symlinks or mount FUSE
// file systems there, or move directories while the removal runs; the tree
// may be far deeper than the number of fds a process may hold.  So the
// removal never follows a symlink, never enters another file system, never
// climbs above its start, and holds a bounded number of fds whatever the
// depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage {

struct RemoveResult {
    std::uint64_t removed = 0;          // entries removed (files, links, dirs, incl. dir itself)
    std::vector<std::string> problems;  // one line each; empty = complete success
    bool ok() const { return problems.empty(); }
};

// Whose permissions a tree is removed with (FsIdentity): root removing a
// job's directory must not remove what the job's user could not.
struct Owner {
    uid_t uid;
    gid_t gid;
};

// Removes `name` in parent_fd and everything below it, adding to `result`:
// - name itself missing is success with nothing removed; name a symlink, not
//   a directory, or on a file system other than `dev`: nothing is removed,
//   a problem is reported.
// - Inside the tree, symlinks are unlinked and never followed; directories on
//   another file system (mount points) are left in place with a problem, and
//   never opened; an entry that cannot be removed is reported and the walk
//   goes on.
// - Directories the remover owns but cannot write or search (read-only
//   trees extracted from an archive) are made 0700 first so their content
//   can go.
// - Depth is unbounded but open fds are not: at most kMaxOpenLevels
//   directories are held open; shallower ones are closed and re-entered
//   through ".." on the way back up, after checking (st_dev, st_ino) that it
//   is the very directory that was left; if it is not (the tree was moved
//   while being removed), the walk stops with a problem.
// - With `as`, everything below name is removed with the permissions of
//   as.uid:as.gid (another user's data moved into the tree stays, reported);
//   name itself goes as the caller once it is empty.  Needs root when as.uid
//   is not the caller.
// shown_parent names parent_fd in messages.
void remove_tree_on(int parent_fd, const std::string& name, dev_t dev, const std::string& shown_parent,
                    RemoveResult& result, const std::optional<Owner>& as = std::nullopt);

// The same on dir_fd's file system (the stager's job directory).
RemoveResult remove_tree_at(int dir_fd, const std::string& name, const std::string& shown_dir);

// The same for a path whose parent is trusted as it is (symlinks above the
// last component are followed, as any open would): the stager removing what
// it unpacked.
RemoveResult remove_tree(const std::string& path);

// How many directory levels a removal keeps open at once.
inline constexpr std::size_t kMaxOpenLevels = 64;

}  // namespace dlstage
