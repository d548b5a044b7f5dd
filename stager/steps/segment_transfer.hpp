// Staging a directory while rank 0 walks it (policy::walks_while_transferring):
// each segment of its plan (stager/plan/plan_segments) is checked against
// the tier's space with what came before it (a shared tier's by rank 0
// before the broadcast, a node tier's on every rank after), and moved as
// soon as it is walked, into one partial directory: on every node, every segment
// through one exchange (exchange_parts), or, to a shared tier, into the
// one copy, each rank its own chunks of every segment as they come
// (OwnChunkCopier).  Collective over ctx.comm; in the job directory (the
// working directory).
#pragma once

#include <cstdint>
#include <functional>

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/plan/plan.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {

struct WalkedTransfer {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
    std::uint64_t bytes = 0;       // the dataset's, in its files
    std::uint64_t files = 0;       // files and symlinks
    std::uint64_t entries = 0;     // and directories
    std::function<void()> done;    // records the job's progress as ready (rank 0)
};

// Rank 0: whether this staging walks its source while it transfers
// (policy::walks_while_transferring, from what rank 0 sees).  copy_there:
// a shared tier holds a copy's record or an unfinished copy.
bool walks_while_transferring(const StageItem& item, const NodeContext& ctx, bool copy_there = false);

// What the caller does along the way, on rank 0 but for piece_written: a
// shared tier's (a node tier takes none).
struct WalkHooks {
    // Once a segment is whole in the partial copy (its files; its
    // directories' modes and its symlinks come with the writer's finish).
    std::function<void(const Plan& segment)> segment_done;
    // Rank 0, once a segment's directories are in the partial copy and
    // before any of its files' bytes: what it will write is known.
    std::function<void(const Plan& segment)> segment_laid_out;
    // When the walk refuses the source (a file this user cannot read, a
    // special file), or a shared tier has no room for it: before the error
    // goes on, while the other ranks wait.
    std::function<void()> walk_refused;
    // Told of the pieces of files written in several (stager/transfer/tree_writer).
    PieceWritten piece_written;
};

// From the source to the complete tree in here.partial_dir on every node,
// or in the shared tier.  The caller publishes it.
WalkedTransfer transfer_while_walking(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                                      const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                                      const WalkHooks& hooks = {});

}  // namespace dlstage::stager
