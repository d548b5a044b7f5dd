// `dlstage pack DIR OUT.sqfs`: one squashfs image made by mksquashfs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pack/pack_tree.hpp"

namespace dlstage::pack {

// A block of 128K holds most of a ~110 KB sample: reading one sample at
// random reads about one block, where 1M blocks (squashfs's maximum) would
// read and decompress eight times more per sample; and compression still
// sees whole samples, so little ratio is lost.
inline constexpr std::uint64_t kDefaultBlockSize = 128ull << 10;
inline constexpr std::uint64_t kMinBlockSize = 4ull << 10;
inline constexpr std::uint64_t kMaxBlockSize = 1ull << 20;

struct SquashfsImage {
    std::uint64_t bytes = 0;
    std::vector<std::string> messages;  // what else mksquashfs said, to pass on
};

// Writes the image of dir (read as tree) to out, under a temporary name
// until it is complete.  Throws Error when mksquashfs fails or loses data.
// image_progress, about every second while mksquashfs runs: the image's
// bytes so far (mksquashfs's own progress bar is no line for a log).
SquashfsImage make_squashfs_image(const std::string& dir, const std::string& out, std::uint64_t block_size,
                                  const PackTree& tree,
                                  const std::function<void(std::uint64_t image_bytes)>& image_progress = {});

}  // namespace dlstage::pack
