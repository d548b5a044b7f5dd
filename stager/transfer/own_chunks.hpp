// The transfer to a shared tier: every rank reads the chunks it owns
// (chunk c: rank c % N, as in the ring) and writes them itself into the one
// tree on the shared file system.  Each byte is read once and written
// once; nothing crosses the interconnect, so nothing needs a checksum.
#pragma once

#include <vector>

#include "stager/transfer/source_reader.hpp"
#include "stager/transfer/transfer_types.hpp"

namespace dlstage::stager {

// The parts of a chunk in order, each at most `most` bytes (a piece longer
// than that is cut): the unit a rank reads and writes.  The chunk stays the
// unit of who owns what (the layout all ranks share).
std::vector<Chunk> split_chunk(const Chunk& chunk, std::uint64_t most);

// progress: (chunks written, bytes written) by this rank.  changes: as
// exchange_chunks' (stager/transfer/exchange.hpp).
ExchangeResult copy_own_chunks(const std::vector<Chunk>& chunks, const Plan& plan, TreeWriter& writer, int rank,
                               int ranks, const ExchangeOptions& options, const ProgressFn& progress,
                               ProvingReads* changes = nullptr);

}  // namespace dlstage::stager
