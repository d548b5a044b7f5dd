// The dataset directory as `dlstage pack` packs it: every entry for the
// shard layout, with the metadata the archive keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <sys/types.h>
#include <vector>

#include "pack/shard_layout.hpp"

namespace dlstage::pack {

struct Metadata {
    mode_t mode = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    struct timespec mtime {};
};

struct PackTree {
    std::vector<PackEntry> entries;  // for the shard layout
    std::vector<Metadata> metadata;  // same indexes
    std::size_t files = 0;           // files and symlinks
    std::uint64_t file_bytes = 0;
    std::time_t newest_mtime = 0;  // of the entries and the directory itself
};

// The tree below dir (walk_dataset: special files and unreadable entries
// are refused there).
PackTree read_pack_tree(const std::string& dir);

}  // namespace dlstage::pack
