// Chunks: the unit that moves between nodes.  File data is cut into pieces
// and packed into chunks of at most chunk_size bytes in plan order, so a
// 110 KB image and a 40 GB file both travel in large messages: no per-file
// message, no per-file collective.  Every rank computes the same layout
// from the plan, so only data and a checksum cross the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stager/plan/plan.hpp"

namespace dlstage::stager {

// 16 bytes: a plan of 1.28 M small files has as many pieces on every rank.
struct Piece {
    std::uint64_t offset = 0;  // within that file
    std::uint32_t entry = 0;   // index into Plan::entries (a file); a plan has fewer than 2^32
    std::uint32_t length = 0;  // at most a chunk (chunk_size is at most 1 GiB)
};

struct Chunk {
    std::vector<Piece> pieces;
    std::uint64_t bytes = 0;
};

// A chunk of small files closes at this many: a chunk is read, sent and
// written whole, and 4 MiB of 2 KB images is 2,000 files read one after
// another before the first of them can be created anywhere (from a cold
// source, seconds; issue 58).  At most 256 per chunk keeps reading and
// creating close behind each other, in messages of half a megabyte still.
constexpr std::size_t kMostFilesPerChunk = 256;

// A file the plan holds a prefix of (Plan::held_prefixes) begins at it.
// Throws Error if chunk_size is 4 GiB or more.
std::vector<Chunk> layout_chunks(const Plan& plan, std::uint64_t chunk_size);

}  // namespace dlstage::stager
