// `dlstage pack DIR OUT`: tar shards OUT-000000.tar, OUT-000001.tar, ...
// (WebDataset style), laid out by shard_layout and written by ShardWriter.
#pragma once

#include <functional>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pack/pack_tree.hpp"
#include "pack/shard_layout.hpp"

namespace dlstage::pack {

inline constexpr std::uint64_t kDefaultShardSize = 1ull << 30;
inline constexpr std::size_t kMaxShards = 1000000;  // OUT-NNNNNN.tar

// shard_count shards if given (not 0), else as many as needed so that none
// is larger than max_shard_bytes.
ShardLayout shard_layout_for(const PackTree& tree, std::size_t shard_count, std::uint64_t max_shard_bytes);

// Shards of an earlier pack with the same prefix: PREFIX-<digits>.tar.
std::vector<std::string> existing_shards(const std::string& prefix);

struct TarShards {
    std::vector<std::string> paths;
    std::uint64_t smallest = 0;
    std::uint64_t largest = 0;
};

// Writes the shards of layout under temporary names, then gives a complete
// set the final names and removes old_shards the new set does not replace.
// progress, now and then: the file bytes and files (and symlinks) written
// so far, as tree counts them.
using PackProgress = std::function<void(std::uint64_t bytes, std::uint64_t files)>;

TarShards write_tar_shards(const std::string& dir, const std::string& prefix, const PackTree& tree,
                           const ShardLayout& layout, const std::vector<std::string>& old_shards,
                           const PackProgress& progress = {});

}  // namespace dlstage::pack
