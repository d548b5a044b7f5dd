// Measuring a tier's file system with statvfs, on a node (the submit side
// has none); the facts are facts/tier_space.
#pragma once

#include <string>

#include "facts/tier_space.hpp"

namespace dlstage {

// Throws Error naming the directory when statvfs fails.
TierSpace measure_tier_space(const std::string& dir);

// The same for a directory already open (root code: no path is resolved
// again, and a mount a user put on the path is not asked); `shown` names it
// in the message.
TierSpace measure_tier_space(int dir_fd, const std::string& shown);

// Whether the tier at `root` has its file system to itself: its root is a
// mount point (mountinfo, the admin's symlinks resolved), so that what the
// file system says is used is the tier's.  False when it cannot tell: a
// tier below /dev/shm or in a /local used for other things shares its
// file system, and what that says is used is not the tier's.
bool has_own_file_system(const std::string& root);

}  // namespace dlstage
