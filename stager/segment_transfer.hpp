// Staging a directory while rank 0 walks it (policy::walks_while_transferring):
// each segment of its plan (stager/plan_segments) is broadcast, checked
// against the tier's space with what came before it, and moved
// (exchange_chunks) as soon as it is walked, into one partial directory.
// Collective over ctx.comm; in the job directory (the working directory).
#pragma once

#include <cstdint>
#include <functional>

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/exchange.hpp"
#include "stager/node_context.hpp"

namespace dlstage::stager {

struct WalkedTransfer {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
    std::uint64_t bytes = 0;       // the dataset's, in its files
    std::uint64_t files = 0;       // files and symlinks
    std::uint64_t entries = 0;     // and directories
    std::function<void()> done;    // records the job's progress as ready (rank 0)
};

// From the source to the complete tree in here.partial_dir on every node.
// The caller publishes it.
WalkedTransfer transfer_while_walking(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                                      const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir);

}  // namespace dlstage::stager
