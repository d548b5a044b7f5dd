// Moving chunks between the ranks (one per node).  Chunk c is read from the
// source by rank c % size, so every node contributes read bandwidth and the
// file system sees each byte once; every rank writes every chunk.  Each
// chunk carries an xxh3 checksum that every receiver verifies.
//
// This version broadcasts one chunk at a time (MPI_Bcast from the reading
// rank).  A pipelined exchange with several chunks in flight replaces it
// behind the same function.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "stager/chunks.hpp"
#include "stager/source_reader.hpp"
#include "stager/tree_writer.hpp"

namespace dlstage::stager {

struct ExchangeOptions {
    std::uint64_t chunk_size = kDefaultChunkSize;
    double read_rate_limit = 0;  // bytes/s per reading rank; 0: unlimited
};

// Called on every rank after each chunk is written: (chunks done, bytes done).
using ProgressFn = std::function<void(std::size_t, std::uint64_t)>;

void exchange_chunks(const std::vector<Chunk>& chunks, SourceReader& reader, TreeWriter& writer,
                     const ExchangeOptions& options, const ProgressFn& progress);

}  // namespace dlstage::stager
