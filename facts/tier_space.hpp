// A tier's file system on a node, as statvfs tells it (tier/tier_measure
// measures it): the fact the admission and cache rules decide over.
#pragma once

#include <cstdint>
#include <optional>

namespace dlstage {

struct TierSpace {
    std::optional<std::uint64_t> total_bytes;
    std::optional<std::uint64_t> free_bytes;    // for the caller (f_bavail)
    std::optional<std::uint64_t> free_inodes;   // unknown on file systems without inode counts
    std::optional<std::uint64_t> total_inodes;  // likewise
};

}  // namespace dlstage
