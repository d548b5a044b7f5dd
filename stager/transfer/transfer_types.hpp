// What every way of moving chunks shares (the ring and bcast of
// stager/transfer/exchange, each rank its own chunks in stager/transfer/own_chunks): the
// options, the progress callback and the result.  No MPI here: the
// non-MPI parts and their unit tests include it.
#pragma once

#include <cstdint>
#include <functional>

#include "config/stager_tuning.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace dlstage::stager {

// The window, threads, chunk size, rate limit and scheme (ring or bcast,
// the non-pipelined baseline: one MPI_Bcast per chunk from the rank that
// read it, the scheme of mpiFileUtils' dbcast) a job chose.
using ExchangeOptions = StagerTuning;

// Called on the calling thread, now and then: (chunks written, bytes written).
using ProgressFn = std::function<void(std::size_t, std::uint64_t)>;

// One part of what one exchange or copier moves: a plan's chunks, written
// by its writer.  All three stay in place until the part is done.
struct ExchangePart {
    const Plan* plan = nullptr;
    TreeWriter* writer = nullptr;
    const std::vector<Chunk>* chunks = nullptr;
};

struct ExchangeResult {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
};

}  // namespace dlstage::stager
