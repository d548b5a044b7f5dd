// A tier's file system as statvfs sees it: the facts the admission policy
// weighs on a node (the submit side has none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlstage {

struct TierSpace {
    std::optional<std::uint64_t> total_bytes;
    std::optional<std::uint64_t> free_bytes;   // for the caller (f_bavail)
    std::optional<std::uint64_t> free_inodes;  // unknown on file systems without inode counts
    std::optional<std::uint64_t> total_inodes;  // likewise
};

// Throws Error naming the directory when statvfs fails.
TierSpace measure_tier_space(const std::string& dir);

// The same for a directory already open (root code: no path is resolved
// again, and a mount a user put on the path is not asked); `shown` names it
// in the message.
TierSpace measure_tier_space(int dir_fd, const std::string& shown);

}  // namespace dlstage
