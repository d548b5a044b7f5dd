// The steps of staging one dataset that node tiers (stager/stage_dataset),
// shared tiers (stager/tiers/shared_tier) and node caches (stager/tiers/cache_tier)
// have in common: the mode against the plan, the space, leftovers, the
// progress record, and the transfer itself.  All are collective over
// ctx.comm (every rank of the job, or of the nodes that take part) unless
// said otherwise; the working directory is the tier directory the stager
// entered and checked.  The plan and the lines every way says are in
// stager/steps/collectives.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mpi.h>
#include <string>
#include <vector>

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "policies/admission.hpp"
#include "stager/plan/plan.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace dlstage::stager {

void check_mode_fits_plan(const StageItem& item, const Plan& plan);
// What this staging has written into the tier before the plan at hand (a
// tree staged in segments: the segments before it).
struct WrittenBefore {
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0;
    // Of those, what is not on the tier yet (segments ahead of the writes):
    // its room is free now, and not for this plan.
    std::uint64_t bytes_pending = 0;
    std::uint64_t entries_pending = 0;
    // A tree walked while it moves: segments not walked yet may follow, so
    // what is known is the least the dataset needs.
    bool walk_goes_on = false;
};
// What the tier already holds of the dataset, which the plan (the whole
// dataset) replaces in place: a copy refreshed file by file.
struct HeldAlready {
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0;
};
// The tier's file system against what the plan brings (this rank's node),
// with what was written before it counted as still to come and its space
// as still free: one rule for a plan checked whole or a segment at a time.
// `held`: space counted as free, not as to come (the plan counts it).  A
// dataset too large for this node's room, staged whole into a tier it
// could be split in, is refused with the nodes a split would take
// (policy::with_split_advice, as at submit).
policy::ExtractionBudget check_space(const StageItem& item, const Fd& job_dir, const std::string& shown,
                                     const Plan& plan, const WrittenBefore& before = {}, const HeldAlready& held = {});
// Removes what an earlier attempt left of the dataset in the directory.
void clear_leftovers(const DatasetLayout& here, const Fd& job_dir, const std::string& shown);

// What rank 0 tells `dlstage status` of a dataset while and after it
// stages: state_dir/jobs/<job>/user/progress-<name>.toml.
struct ProgressFigures {
    const char* state;
    std::uint64_t bytes_total = 0;
    std::uint64_t bytes_done = 0;
    std::uint64_t files_total = 0;
    double elapsed = 0;                 // seconds
    double eta = 0;                     // seconds
    std::string path;                   // the copy's path, when it is known
    std::vector<std::uint64_t> shares;  // a split dataset: each node's bytes, in the job's node order
};
// Returns false, with nothing said, if the record cannot be written:
// progress is a courtesy and a missing user state dir must not fail staging.
bool write_progress(const StageItem& item, const NodeContext& ctx, const ProgressFigures& figures,
                    std::string& problem);
// Adds to the record written last the nodes whose cache held the dataset
// (`cache_hits`), for `dlstage status` to say where a job found its data
// ("cache hit on n2").  False, with the problem, as write_progress.
bool note_cache_hits(const StageItem& item, const NodeContext& ctx, const std::vector<std::string>& nodes,
                     std::string& problem);

struct TransferResult {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
    std::function<void()> done;    // records the job's progress as ready (rank 0)
    SourceDrift drift;             // files not as planned, over all ranks (with `changes`)
};

// How the tree writer writes into the item's tier.
WriterOptions writer_options_for(const StageItem& item);

// The plan's directories (and empty files): made on every node, or in a
// shared tier by rank 0 while the others wait.
void make_skeleton(TreeWriter& writer, bool shared, const NodeContext& ctx);

// From the plan to the complete tree in here.partial_dir: read once,
// written on every node (node tiers) or once into the shared tier, and
// extracted (mode = "extract").  The caller publishes it.  continues:
// partial_dir holds the rest of the copy already, and plan what is still
// to write (stager/copies/unfinished_copy).  changes: a source file not as
// planned is counted there and read on as zeros (else it throws); the
// result's drift then says so on every rank, nothing is extracted, and the
// caller must not publish partial_dir.  piece_written: told of the
// pieces of files written in several (the log a copy cut off mid-file is
// gone on from).
TransferResult transfer(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                        const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& plan,
                        const policy::ExtractionBudget& budget, bool continues = false, ProvingReads* changes = nullptr,
                        const PieceWritten& piece_written = nullptr);

}  // namespace dlstage::stager
