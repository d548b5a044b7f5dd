// The steps of staging one dataset that node tiers (stager/stage_dataset)
// and shared tiers (stager/shared_tier) have in common.  All are collective
// over ctx.comm (every rank of the job, or of the nodes that take part)
// unless said otherwise; the working directory is the
// tier directory the stager entered and checked.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mpi.h>
#include <string>

#include "job/job_layout.hpp"
#include "config/stage_spec.hpp"
#include "lib/sys/fd.hpp"
#include "policies/admission.hpp"
#include "stager/plan.hpp"
#include "stager/stage_dataset.hpp"

namespace dlstage::stager {

bool all_ranks(MPI_Comm comm, bool mine);
std::uint64_t reduce_over_ranks(MPI_Comm comm, std::uint64_t mine, MPI_Op op);
// Waits for a nonblocking collective, or a barrier, sleeping instead of
// spinning a core.
void quiet_wait(MPI_Request& request);
void quiet_barrier(MPI_Comm comm);

// Rank 0 plans (from the dataset's manifest when it is current, else with
// a walk; or with a walk whatever there is) and every rank gets the plan.
enum class PlanFrom { ManifestOrWalk, Walk };
Plan broadcast_plan(const StageItem& item, const NodeContext& ctx, PlanFrom from = PlanFrom::ManifestOrWalk);
// The same, with rank 0 saying now and then how many entries its walk found.
Plan plan_saying_progress(const StageItem& item, const NodeContext& ctx, PlanFrom from = PlanFrom::ManifestOrWalk);
// A plan from a manifest is current as far as directories go: true when
// every source file is still as the plan says too, or the site promised
// that the dataset's source is never rewritten in place (immutable =
// true), or the plan came from a walk; else rank 0 says what changed.
bool plan_still_holds(const StageItem& item, const NodeContext& ctx, const Plan& plan);
// The plan every way of staging uses: plan_saying_progress, and when that
// plan came from a manifest that does not hold file by file, a walk's.  A
// kept copy is reused unread on its word, and a stale manifest's plan
// would fail the staging at the first file rewritten since the scan, job
// after job.  source_s: the seconds plan_still_holds took.
Plan usable_plan(const StageItem& item, const NodeContext& ctx, double* source_s = nullptr);
void check_mode_fits_plan(const StageItem& item, const Plan& plan);
// The tier's file system against what the plan brings (this rank's node).
policy::ExtractionBudget check_space(const StageItem& item, const Fd& job_dir, const std::string& shown,
                                     const Plan& plan);
// Removes what an earlier attempt left of the dataset in the directory.
void clear_leftovers(const DatasetLayout& here, const Fd& job_dir, const std::string& shown);

// What rank 0 tells `dlstage status` of a dataset while and after it
// stages: state_dir/jobs/<job>/user/progress-<name>.toml.
struct ProgressFigures {
    const char* state;
    std::uint64_t bytes_total = 0;
    std::uint64_t bytes_done = 0;
    std::uint64_t files_total = 0;
    double elapsed = 0;  // seconds
    double eta = 0;      // seconds
    std::string path;    // the copy's path, when it is known
};
// Returns false, with nothing said, if the record cannot be written:
// progress is a courtesy and a missing user state dir must not fail staging.
bool write_progress(const StageItem& item, const NodeContext& ctx, const ProgressFigures& figures,
                    std::string& problem);

// "staging NAME (SIZE in N files) from SOURCE to TIER on N nodes" (rank 0).
void say_staging(const StageItem& item, const NodeContext& ctx, const Plan& plan);

struct TransferResult {
    std::uint64_t bytes_read = 0;  // from the source, by this rank
    std::function<void()> done;    // records the job's progress as ready (rank 0)
};

// From the plan to the complete tree in here.partial_dir: read once,
// written on every node (node tiers) or once into the shared tier, and
// extracted (mode = "extract").  The caller publishes it.
TransferResult transfer(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                        const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& plan,
                        const policy::ExtractionBudget& budget);

// The summary line (rank 0; every rank must call it: it reduces).
void say_transferred(const StageItem& item, const NodeContext& ctx, const Plan& plan, std::uint64_t bytes_read,
                     std::chrono::steady_clock::time_point start, std::uint64_t cpu_start);
std::uint64_t cpu_now();  // this process's CPU time so far, microseconds

}  // namespace dlstage::stager
