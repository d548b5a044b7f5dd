// The transfer to a shared tier: every rank reads the chunks it owns
// (chunk c: rank c % N, as in the ring) and writes them itself into the one
// tree on the shared file system.  Each byte is read once and written
// once; nothing crosses the interconnect, so nothing needs a checksum.
#pragma once

#include <vector>

#include "stager/exchange.hpp"

namespace dlstage::stager {

// progress: (chunks written, bytes written) by this rank.
ExchangeResult copy_own_chunks(const std::vector<Chunk>& chunks, const Plan& plan, TreeWriter& writer, int rank,
                               int ranks, const ExchangeOptions& options, const ProgressFn& progress);

}  // namespace dlstage::stager
