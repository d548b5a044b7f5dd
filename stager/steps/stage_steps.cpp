#include "stager/steps/stage_steps.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/admission.hpp"
#include "policies/purge.hpp"
#include "policies/staging_mode.hpp"
#include "stager/extract/extract.hpp"
#include "stager/extract/extract_budget.hpp"
#include "stager/plan/source_check.hpp"
#include "stager/plan/split_share.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/steps/unpack_step.hpp"
#include "stager/transfer/own_chunks.hpp"
#include "tier/tier_measure.hpp"

namespace dlstage::stager {

using Clock = std::chrono::steady_clock;

// Leftovers of an earlier attempt in this job (a restage after a failure).
void clear_leftovers(const DatasetLayout& here, const Fd& job_dir, const std::string& shown)
{
    for (const std::string* name : {&here.partial_dir, &here.incoming_dir, &here.dataset_dir, &here.image_dir}) {
        const RemoveResult removed = remove_tree_at(job_dir.get(), *name, shown);
        if (!removed.ok())
            throw Error("cannot clear " + shown + "/" + *name + ": " + removed.problems.front());
    }
    for (const std::string* marker : {&here.ready_marker, &here.staged_marker})
        if (unlinkat(job_dir.get(), marker->c_str(), 0) != 0 && errno != ENOENT)
            throw_cannot("remove", shown + "/" + *marker, errno);
}

void check_mode_fits_plan(const StageItem& item, const Plan& plan)
{
    policy::require(policy::mode_fits_source(item.dataset.mode, plan.format, plan.single_file, item.dataset.source));
}

// The tier's file system on this node, against what the plan brings.  The
// extracted size of archives is not known before extraction: their own size
// is the floor, and the budget returned bounds what extraction may write.
policy::ExtractionBudget check_space(const StageItem& item, const Fd& job_dir, const std::string& shown,
                                     const Plan& plan, const WrittenBefore& before, const HeldAlready& held)
{
    TierSpace space = measure_tier_space(job_dir.get(), shown);
    const auto less_pending = [](std::uint64_t free, std::uint64_t pending) {
        return free > pending ? free - pending : 0;
    };
    if (space.free_bytes)
        *space.free_bytes = less_pending(*space.free_bytes + before.bytes + held.bytes, before.bytes_pending);
    if (space.free_inodes)
        *space.free_inodes = less_pending(*space.free_inodes + before.entries + held.entries, before.entries_pending);
    SourceFacts facts;
    facts.bytes = before.bytes + plan.total_bytes();
    facts.files = before.entries + plan.entry_count();
    const policy::Verdict whole = policy::admit(item.dataset, item.tier, facts, space);
    if (!whole.allowed)
        policy::require(
            policy::with_split_advice(whole, item.dataset, item.tier, plan.format,
                                      split_facts_here(item, plan, space, before.bytes, before.walk_goes_on)));
    return policy::extraction_budget(item.dataset, item.tier, facts, space);
}


bool write_progress(const StageItem& item, const NodeContext& ctx, const ProgressFigures& figures, std::string& problem)
{
    toml::table record{{"dataset", item.dataset.name},
                       {"tier", item.tier.name},
                       {"state", figures.state},
                       {"nodes", figures.shares.empty() ? static_cast<std::int64_t>(ctx.size)
                                                        : static_cast<std::int64_t>(figures.shares.size())},
                       {"bytes_total", static_cast<std::int64_t>(figures.bytes_total)},
                       {"bytes_done", static_cast<std::int64_t>(figures.bytes_done)},
                       {"files_total", static_cast<std::int64_t>(figures.files_total)},
                       {"elapsed_s", figures.elapsed},
                       {"bytes_per_s",
                        figures.elapsed > 0 ? static_cast<double>(figures.bytes_done) / figures.elapsed : 0.0},
                       {"eta_s", figures.eta},
                       {"time", static_cast<std::int64_t>(std::time(nullptr))}};
    if (!figures.path.empty())
        record.insert("path", figures.path);
    if (!figures.shares.empty()) {
        toml::array shares;
        for (const std::uint64_t bytes : figures.shares)
            shares.push_back(static_cast<std::int64_t>(bytes));
        record.insert("placement", "split");
        record.insert("shares", std::move(shares));
    }
    const char* array_job = std::getenv(kArrayJobIdVar);
    const char* array_task = std::getenv(kArrayTaskIdVar);
    if (array_job && *array_job && array_task && *array_task) {
        record.insert("array_job_id", array_job);
        record.insert("array_task_id", array_task);
    }
    try {
        write_record(progress_record_path(ctx.state_dir, ctx.values.job_id, item.dataset.name), record);
        return true;
    } catch (const Error& e) {
        problem = e.what();
        return false;
    }
}

bool note_cache_hits(const StageItem& item, const NodeContext& ctx, const std::vector<std::string>& nodes,
                     std::string& problem)
{
    const std::string path = progress_record_path(ctx.state_dir, ctx.values.job_id, item.dataset.name);
    try {
        toml::table record = read_record(path);
        toml::array hits;
        for (const std::string& node : nodes)
            hits.push_back(node);
        record.insert_or_assign("cache_hits", std::move(hits));
        write_record(path, record);
        return true;
    } catch (const Error& e) {
        problem = e.what();
        return false;
    }
}

namespace {

// Rank 0, now and then: a line in the job output and the same figures in
// a progress record (state_dir/jobs/<job>/user/progress-<name>.toml) that
// `dlstage status` and admins can read while the job stages.
class Progress {
public:
    Progress(const StageItem& item, const Plan& plan, std::size_t chunks, const NodeContext& ctx)
        : item_(item), plan_(plan), total_(plan.bytes_to_write()), files_(plan.file_count()), chunks_(chunks),
          ctx_(ctx), start_(Clock::now()), last_(start_)
    {
        // A split dataset's rank 0 moves about its share of the whole:
        // what it did, scaled up, is about what all did.
        if (!ctx.split.shares.empty() && total_ > 0) {
            scale_ = static_cast<double>(ctx.split.bytes) / static_cast<double>(total_);
            total_ = ctx.split.bytes;
            files_ = ctx.split.files;
        }
    }
    void operator()(std::size_t done_chunks, std::uint64_t mine)
    {
        if (ctx_.rank != 0 || ctx_.quiet || done_chunks == chunks_)
            return;
        const auto done_bytes = std::min(total_, static_cast<std::uint64_t>(static_cast<double>(mine) * scale_));
        const auto now = Clock::now();
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        const bool first_bytes = done_bytes > 0 && !bytes_recorded_;
        bytes_recorded_ = bytes_recorded_ || done_bytes > 0;
        if (std::chrono::duration<double>(now - last_).count() < ctx_.progress_interval) {
            // The first bytes are recorded at once, without a line: a mover
            // job tells by them that its run moved the copy on (launch/
            // mover_limit), however soon its time limit comes.
            if (first_bytes)
                record(kStagingState, done_bytes, elapsed, 0);
            return;
        }
        last_ = now;
        const double per_s = static_cast<double>(done_bytes) / elapsed;
        // Nothing written yet (the first opens of a small-file source take
        // a while): no rate, so no ETA and no "0%" to say.
        if (done_bytes == 0) {
            sayf("%s: starting: %s in %llu files to move, none written yet", item_.dataset.name.c_str(),
                 format_size(total_).c_str(), static_cast<unsigned long long>(files_));
            record(kStagingState, done_bytes, elapsed, 0);
            return;
        }
        const double eta = static_cast<double>(total_ - done_bytes) / per_s;
        sayf("%s: %s of %s (%.0f%%), %s, ETA %.0f s", item_.dataset.name.c_str(), format_size(done_bytes).c_str(),
             format_size(total_).c_str(), 100.0 * static_cast<double>(done_bytes) / static_cast<double>(total_),
             format_rate(done_bytes, elapsed).c_str(), eta);
        record(kStagingState, done_bytes, elapsed, eta);
    }

    void done()
    {
        if (ctx_.rank == 0 && !ctx_.quiet)
            record(kReadyState, total_, std::chrono::duration<double>(Clock::now() - start_).count(), 0);
    }

private:
    void record(const char* state, std::uint64_t done_bytes, double elapsed, double eta) const
    {
        std::string problem;
        if (!write_progress(item_, ctx_, {state, total_, done_bytes, files_, elapsed, eta, {}, ctx_.split.shares},
                            problem) &&
            !warned_) {
            sayf("%s: no progress record: %s", item_.dataset.name.c_str(), problem.c_str());
            warned_ = true;
        }
    }

    const StageItem& item_;
    const Plan& plan_;
    std::uint64_t total_;
    std::uint64_t files_;
    double scale_ = 1.0;
    std::size_t chunks_;
    const NodeContext& ctx_;
    Clock::time_point start_, last_;
    bool bytes_recorded_ = false;
    mutable bool warned_ = false;
};

}  // namespace

WriterOptions writer_options_for(const StageItem& item)
{
    WriterOptions options;
    options.shared = item.tier.shared();
    options.keep_times = policy::keeps_source_mtimes(item.tier);
    if (item.tier.node_cache())
        options.file_mode_mask = 0555;
    return options;
}

void make_skeleton(TreeWriter& writer, bool shared, const NodeContext& ctx)
{
    if (!shared || ctx.rank == 0)
        writer.create_skeleton();
    if (shared)
        quiet_barrier(ctx.comm);
    stage_phases().lap(Phase::Skeleton);
}

TransferResult transfer(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                        const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& plan,
                        const policy::ExtractionBudget& budget, bool continues, ProvingReads* changes,
                        const PieceWritten& piece_written)
{
    const bool shared = item.tier.shared();
    const bool extract = item.dataset.mode == Mode::Extract;
    WriterOptions writing = writer_options_for(item);
    writing.continues = continues;
    writing.piece_written = piece_written;
    TreeWriter writer(plan, extract ? here.incoming_dir : here.partial_dir, writing);
    // A listing before the opens pays when a rank opens much of each
    // directory; with many ranks each opens a little of every one, and the
    // listings would multiply the metadata service's work.
    constexpr int kMostRanksListing = 8;
    if (changes)
        changes->list_directories = (ctx.job_nodes > 0 ? ctx.job_nodes : ctx.size) <= kMostRanksListing;
    stage_phases().lap(Phase::Prepare);
    make_skeleton(writer, shared, ctx);
    const auto chunks = layout_chunks(plan, options.chunk_size);
    const auto progress = std::make_shared<Progress>(item, plan, chunks.size(), ctx);
    ExchangeResult exchanged;
    if (shared) {
        // Rank 0 sees its own share: about one in N of what all write.
        exchanged = copy_own_chunks(
            chunks, plan, writer, ctx.rank, ctx.size, options,
            [&](std::size_t done, std::uint64_t bytes) {
                (*progress)(std::min(chunks.size() - 1, done * static_cast<std::size_t>(ctx.size)),
                            std::min(plan.bytes_to_write(), bytes * static_cast<std::uint64_t>(ctx.size)));
            },
            changes);
        quiet_barrier(ctx.comm);
        stage_phases().lap(Phase::Transfer);
        writer.finish_split_files();
        quiet_barrier(ctx.comm);
        if (ctx.rank == 0)
            writer.finish();
    } else {
        exchanged = exchange_chunks(plan, chunks, writer, options, std::ref(*progress), ctx.comm, changes);
        stage_phases().lap(Phase::Transfer);
        writer.finish();
    }
    stage_phases().lap(Phase::Finish);
    if (changes) {
        // Empty files have no pieces: no read proved them.
        SourceDrift mine = check_source(plan, ctx.rank, ctx.size, 16, Checked::EmptyFiles);
        mine.changed += changes->count();
        if (changes->count() > 0)
            mine.example = changes->example();
        const SourceDrift drift = drift_over_ranks(ctx.comm, ctx.rank, mine);
        if (drift.changed > 0)
            return {exchanged.bytes_read, {}, drift};
    }
    if (extract) {
        // To a shared tier every rank unpacks its own shards into the one
        // copy (stager/steps/unpack_step); on a node tier each its own copy.
        const auto extract_start = Clock::now();
        const Unpacked unpacked =
            shared ? unpack_over_ranks(here, job_dir, layout.tier_dir, plan, options.writers, budget, ctx)
                   : unpack_here(here, job_dir, layout.tier_dir, plan, options.writers, budget);
        const double seconds = std::chrono::duration<double>(Clock::now() - extract_start).count();
        if (ctx.rank == 0 && !ctx.quiet) {
            if (unpacked.stripped > 0)
                sayf("%s: removed setuid/setgid/sticky bits from %llu entries", item.dataset.name.c_str(),
                     static_cast<unsigned long long>(unpacked.stripped));
            const std::string where = item.split            ? std::string("each node, its share")
                                      : !shared             ? std::string("each node")
                                      : unpacked.ranks == 1 ? std::string("one node")
                                                            : std::to_string(unpacked.ranks) + " nodes";
            sayf("%s: extracted %llu %s in %.2f s on %s (%u threads)", item.dataset.name.c_str(),
                 static_cast<unsigned long long>(plan.entries.size()),
                 plan.entries.size() == 1 ? "archive" : "archives", seconds, where.c_str(), options.writers);
        }
    }
    stage_phases().lap(Phase::Extract);
    return {exchanged.bytes_read, [progress] { progress->done(); }, {}};
}

}  // namespace dlstage::stager
