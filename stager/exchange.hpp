// Moving chunks between the ranks (one per node).
//
// Chunk c is read from the source by rank c % N, so every node contributes
// read bandwidth and the file system sees each byte once.  It then travels
// around a ring, owner -> owner+1 -> ... -> owner+N-1: every rank receives
// from its left neighbour every chunk it did not read, and sends to its right
// neighbour every chunk that neighbour did not read.  Each link carries
// (N-1)/N of the data whatever N is, so the time stays flat as nodes are
// added.  A window of chunks is in flight at once: reading (several threads,
// each its own stream), the network (nonblocking sends and receives) and
// writing (several threads) overlap; there is no per-chunk collective.
// Every chunk carries an xxh3 checksum that every receiver verifies.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "stager/chunks.hpp"
#include "stager/tree_writer.hpp"

namespace dlstage::stager {

// Ring: the pipelined ring above.  Bcast: one chunk at a time, MPI_Bcast
// from the rank that read it (many readers, no pipelining: the scheme of
// mpiFileUtils' dbcast), kept as the baseline the benchmark measures.
enum class ExchangeScheme { Ring, Bcast };

struct ExchangeOptions {
    ExchangeScheme scheme = ExchangeScheme::Ring;
    std::uint64_t chunk_size = kDefaultChunkSize;
    unsigned window = 16;  // chunks in flight per rank: memory = window x chunk_size
    unsigned readers = 4;  // reading threads per rank (each its own stream)
    unsigned writers = 4;  // writing threads per rank
    double read_rate_limit = 0;  // source bytes/s per rank; 0: unlimited
};

// Called on the calling thread, now and then: (chunks written, bytes written).
using ProgressFn = std::function<void(std::size_t, std::uint64_t)>;

struct ExchangeResult {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
};

// Collective over MPI_COMM_WORLD; throws Error on a read, write, checksum
// or communication failure on this rank.
ExchangeResult exchange_chunks(const Plan& plan, const std::vector<Chunk>& chunks, TreeWriter& writer,
                               const ExchangeOptions& options, const ProgressFn& progress);

}  // namespace dlstage::stager
