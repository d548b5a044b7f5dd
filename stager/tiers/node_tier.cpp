#include "stager/tiers/node_tier.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mpi.h>
#include <sys/stat.h>

#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "stager/plan/plan.hpp"
#include "stager/plan/split_share.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/steps/segment_transfer.hpp"
#include "stager/steps/stage_steps.hpp"

namespace dlstage::stager {

using Clock = std::chrono::steady_clock;

namespace {
// Where the stager's result goes and the marker that says it is complete:
// the dataset itself and its ready marker, or for mode = "mount" the image
// and the staged marker (the holder mounts it and writes the ready marker).
struct StagerOutput {
    const std::string& dir;
    const std::string& marker;
};

StagerOutput stager_output(const StageItem& item, const DatasetLayout& layout)
{
    if (item.dataset.mode == Mode::Mount)
        return {layout.image_dir, layout.staged_marker};
    return {layout.dataset_dir, layout.ready_marker};
}

bool staged_here(const StageItem& item, const DatasetLayout& layout)
{
    const StagerOutput output = stager_output(item, layout);
    return name_exists(output.dir) && read_ready_marker(output.marker).has_value();
}

// Renames the verified copy into place and writes the marker, last.  An
// image to be mounted goes to image_dir, next to an empty mount point, and
// gets the staged marker: `dlstage hold-mounts` writes the ready marker
// once it is mounted.
// here: the names relative to the job directory, for the calls; layout: the
// paths, for messages and for what DLSTAGE_<NAME> will hold.
// one_file: the file's name when the job sees one file, else "".
void publish(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const std::string& one_file,
             std::uint64_t bytes, std::uint64_t files, const std::string& index = {})
{
    const StagerOutput output = stager_output(item, here);
    const std::string into = stager_output(item, layout).dir;
    if (rename(here.partial_dir.c_str(), output.dir.c_str()) != 0)
        throw_cannot("rename", layout.partial_dir + " to " + into, errno);
    if (item.dataset.mode == Mode::Mount && mkdir(here.dataset_dir.c_str(), 0700) != 0)
        throw_cannot("create the mount point", layout.dataset_dir, errno);
    ReadyMarker marker;
    marker.dataset = item.dataset.name;
    marker.tier = item.tier.name;
    marker.source = item.dataset.source;
    marker.path = one_file.empty() ? into : into + "/" + one_file;
    marker.bytes = bytes;
    marker.files = files;
    marker.index = index;
    write_ready_marker(output.marker, marker);
}

// Plans and moves the dataset into here.partial_dir.  A plan from a
// manifest is not checked file by file first: the open that reads each
// file proves it (stager/transfer/source_reader), so a file is asked for once.  One
// found not as planned (rewritten in place since the scan) discards what
// was written; the dataset is then planned from a walk and moved again.
TransferResult plan_and_transfer(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                                 const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, Plan& plan)
{
    plan = plan_saying_progress(item, ctx);
    stage_phases().lap(Phase::Plan);
    const bool unchecked = manifest_unchecked(item, ctx, plan);
    for (int attempt = 0;; ++attempt) {
        check_mode_fits_plan(item, plan);
        const policy::ExtractionBudget budget = check_space(item, job_dir, layout.tier_dir, plan);
        if (ctx.rank == 0)
            say_staging(item, ctx, plan);
        ProvingReads changes;
        TransferResult moved = transfer(item, ctx, options, layout, here, job_dir, plan, budget, false,
                                        unchecked && attempt == 0 ? &changes : nullptr);
        if (moved.drift.changed == 0)
            return moved;
        say_stale_manifest(item, ctx, moved.drift);
        clear_leftovers(here, job_dir, layout.tier_dir);
        plan = plan_saying_progress(item, ctx, PlanFrom::Walk);
        stage_phases().lap(Phase::Plan);
    }
}
// A split dataset (stager/plan/split_share): every rank places rank 0's plan
// the same way and moves its own share alone, reading it from the source
// itself (each part is read once, by the node that holds it: no
// exchange), then writes the index beside it.  A manifest's plan is proven
// by the reads, as in plan_and_transfer, over all ranks.
void stage_split(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                 const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir)
{
    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    Plan whole = plan_saying_progress(item, ctx);
    stage_phases().lap(Phase::Plan);
    const bool unchecked = manifest_unchecked(item, ctx, whole);
    const auto node = static_cast<std::size_t>(ctx.rank);
    for (int attempt = 0;; ++attempt) {
        check_mode_fits_plan(item, whole);
        const SplitLayout split = place_for(item, whole, static_cast<std::size_t>(ctx.size));
        const Plan mine = share_of(whole, split, node);
        const policy::ExtractionBudget budget = check_space(item, job_dir, layout.tier_dir, mine);
        if (ctx.rank == 0)
            say_staging(item, ctx, whole, shares_text(split));
        ProvingReads changes;
        const NodeContext::SplitProgress progress{whole.total_bytes(), whole.file_count(), split.share_bytes};
        const NodeContext own = part_of(ctx, MPI_COMM_SELF, &progress);  // alone: its share is its own
        const TransferResult moved = transfer(item, own, options, layout, here, job_dir, mine, budget, false,
                                              unchecked && attempt == 0 ? &changes : nullptr);
        const SourceDrift drift = drift_over_ranks(ctx.comm, ctx.rank, moved.drift);
        if (drift.changed > 0) {
            say_stale_manifest(item, ctx, drift);
            clear_leftovers(here, job_dir, layout.tier_dir);
            whole = plan_saying_progress(item, ctx, PlanFrom::Walk);
            stage_phases().lap(Phase::Plan);
            continue;
        }
        MPI_Barrier(ctx.comm);  // every node holds its share, verified
        const std::vector<std::string> hosts = texts_over_ranks(ctx.comm, ctx.node);
        replace_file_at(job_dir.get(), layout.tier_dir, here.split_index,
                        split_index_json(item, whole, split, node, hosts), 0644);
        publish(item, layout, here, {}, split.share_bytes[node], split.share_files[node], layout.split_index);
        moved.done();
        say_transferred(item, ctx, whole.total_bytes(), moved.bytes_read, start, cpu_start);
        return;
    }
}
}  // namespace

void stage_node_tier(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                     const DatasetLayout& layout, const Fd& job_dir)
{
    const DatasetLayout here = dataset_layout_within(item);
    if (all_ranks(ctx.comm, staged_here(item, here))) {
        if (ctx.rank == 0)
            sayf("%s is already staged to %s on %d nodes", item.dataset.name.c_str(), item.tier.name.c_str(), ctx.size);
        return;
    }
    clear_leftovers(here, job_dir, layout.tier_dir);
    if (item.split) {
        stage_split(item, ctx, options, layout, here, job_dir);
        return;
    }

    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    if (all_ranks(ctx.comm, ctx.rank != 0 || walks_while_transferring(item, ctx))) {
        if (ctx.rank == 0)
            sayf("staging %s from %s to %s on %d nodes, walking it meanwhile", item.dataset.name.c_str(),
                 item.dataset.source.c_str(), item.tier.name.c_str(), ctx.size);
        const WalkedTransfer moved = transfer_while_walking(item, ctx, options, layout, here, job_dir);
        MPI_Barrier(ctx.comm);  // as below
        publish(item, layout, here, {}, moved.bytes, moved.files);
        moved.done();
        say_transferred(item, ctx, moved.bytes, moved.bytes_read, start, cpu_start);
        return;
    }
    Plan plan;
    const TransferResult moved = plan_and_transfer(item, ctx, options, layout, here, job_dir, plan);

    // Publish only once every node holds a complete, verified copy: a rank
    // that failed has exited by now, and the launcher stops the others
    // (srun --kill-on-bad-exit), so no rank gets past this barrier.
    MPI_Barrier(ctx.comm);
    const bool one_file = plan.single_file && item.dataset.mode != Mode::Extract;
    publish(item, layout, here, one_file ? plan.entries.front().path : std::string(), plan.total_bytes(),
            plan.file_count());
    moved.done();
    say_transferred(item, ctx, plan.total_bytes(), moved.bytes_read, start, cpu_start);
}

}  // namespace dlstage::stager
