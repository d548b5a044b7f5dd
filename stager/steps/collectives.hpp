// What every way of staging does together over the ranks (stager/
// stage_dataset, stager/tiers/shared_tier, stager/tiers/cache_tier): waits and
// reductions that sleep instead of spinning a core, the plan made by rank
// 0 and broadcast (checked file by file when it came from a manifest), and
// the lines rank 0 says before and after a transfer.  All are collective
// over ctx.comm.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mpi.h>
#include <string>
#include <vector>

#include "config/stage_spec.hpp"
#include "stager/plan/plan.hpp"
#include "stager/plan/plan_segments.hpp"
#include "stager/plan/source_check.hpp"
#include "stager/steps/node_context.hpp"

namespace dlstage::stager {

bool all_ranks(MPI_Comm comm, bool mine);
std::uint64_t reduce_over_ranks(MPI_Comm comm, std::uint64_t mine, MPI_Op op);
std::int64_t reduce_min(MPI_Comm comm, std::int64_t mine);
// Every rank's values one after another, in rank order, on every rank
// (a few: each rank sends all of its own to all).
std::vector<std::uint64_t> values_over_ranks(MPI_Comm comm, const std::vector<std::uint64_t>& mine);
// One flag per entry, set on every rank where any rank set it.
void flags_over_ranks(MPI_Comm comm, std::vector<char>& flags);
// Waits for a nonblocking collective, or a barrier, sleeping instead of
// spinning a core.
void quiet_wait(MPI_Request& request);
void quiet_barrier(MPI_Comm comm);
// Rank root's text (one line: an identity, a message's example; cut at
// 1023 bytes) on every rank.
std::string broadcast_text(MPI_Comm comm, int root, const std::string& text);
// Every rank's text (a host name; cut at 255 bytes), in rank order, on every rank.
std::vector<std::string> texts_over_ranks(MPI_Comm comm, const std::string& mine);

// Rank 0 plans (from the dataset's manifest when it is current, else with
// a walk; or with a walk whatever there is) and every rank gets the plan.
enum class PlanFrom { ManifestOrWalk, Walk };
Plan broadcast_plan(const StageItem& item, const NodeContext& ctx, PlanFrom from = PlanFrom::ManifestOrWalk);
// What rank 0 does with each segment before SegmentBroadcast sends it (a
// shared tier's directories are made then, so that every rank may write
// into them once it has the segment), and whether a refusal is agreed on:
// what the walk or before_send throws is then not thrown at once, but
// every rank's poll says Refused (rank 0's refusal() holds it), so that
// every rank stops writing before rank 0 removes what was written (or
// keeps it: segment_transfer tells the tier's failures apart).  Without,
// it is thrown on rank 0 (the launcher then stops the others).
struct SegmentSending {
    std::function<void(const Plan&)> before_send;
    bool agree_on_refusal = false;
};

// The next segment of a plan rank 0 walks while the ranks transfer
// (stager/plan/plan_segments; walk: rank 0's, null on the others), on every
// rank, for a thread that must not wait (stager/steps/segment_transfer):
// poll says at once whether the next segment is here, and moves its
// broadcast on; End once the walk is done.
class SegmentBroadcast {
public:
    enum class Got { Segment, NotYet, End, Refused };
    SegmentBroadcast(const StageItem& item, const NodeContext& ctx, SegmentedWalk* walk, SegmentSending rank0 = {});
    // A broadcast still under way (the staging failed) keeps its buffers
    // to the process's exit: MPI may still write into them.
    ~SegmentBroadcast();
    SegmentBroadcast(const SegmentBroadcast&) = delete;
    SegmentBroadcast& operator=(const SegmentBroadcast&) = delete;

    Got poll(Plan& segment);
    // Rank 0, once poll said Refused: what was thrown.
    std::exception_ptr refusal() const { return refusal_; }

private:
    struct InFlight;
    bool post_next_block();
    // Rank 0: the next segment from the walk, made ready to send, into
    // next; false while the walk has none yet.
    bool take_from_walk(InFlight& next);

    const StageItem& item_;
    const NodeContext& ctx_;
    SegmentedWalk* walk_;
    SegmentSending rank0_;
    std::unique_ptr<InFlight> now_;
    bool ended_ = false;
    bool refused_ = false;
    std::exception_ptr refusal_;
};
// broadcast_plan, with rank 0 saying now and then how many entries its walk found.
Plan plan_saying_progress(const StageItem& item, const NodeContext& ctx, PlanFrom from = PlanFrom::ManifestOrWalk);
// Whether the plan came from a manifest (rank 0's word, on every rank) and
// the site did not promise the source immutable: a plan current as far as
// directories go, still to be proven file by file (by a stat of each, or by
// the open that reads each).
bool manifest_unchecked(const StageItem& item, const NodeContext& ctx, const Plan& plan);
// A plan from a manifest is current as far as directories go: true when
// every source file is still as the plan says too, or the site promised
// that the dataset's source is never rewritten in place (immutable =
// true), or the plan came from a walk; else rank 0 says what changed.
bool plan_still_holds(const StageItem& item, const NodeContext& ctx, const Plan& plan);
// What every rank found not as planned (SourceDrift: stager/plan/source_check),
// added up, with the lowest such rank's example, on every rank.
SourceDrift drift_over_ranks(MPI_Comm comm, int rank, const SourceDrift& mine);
// Rank 0: "manifest of NAME is older than its source (N files changed in
// place since the scan, e.g. EXAMPLE): planning from a walk; run ...".
void say_stale_manifest(const StageItem& item, const NodeContext& ctx, const SourceDrift& drift);
// "staging NAME (SIZE in N files) from SOURCE to TIER on N nodes" (rank 0);
// a split dataset: "... split over N nodes, A to B each" (shares: that text).
void say_staging(const StageItem& item, const NodeContext& ctx, const Plan& plan, const std::string& shares = {});

// The summary line (rank 0; every rank must call it: it reduces).
void say_transferred(const StageItem& item, const NodeContext& ctx, std::uint64_t total_bytes, std::uint64_t bytes_read,
                     std::chrono::steady_clock::time_point start, std::uint64_t cpu_start);
std::uint64_t cpu_now();  // this process's CPU time so far, microseconds

}  // namespace dlstage::stager
