#include "stager/steps/segment_transfer.hpp"

#include <cerrno>
#include <chrono>
#include <deque>
#include <memory>
#include <sys/stat.h>

#include "dataset/manifest.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/staging_mode.hpp"
#include "stager/plan/plan_segments.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/steps/stage_steps.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/own_chunks.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace dlstage::stager {

namespace {
using Clock = std::chrono::steady_clock;

// Rank 0, now and then: a line and the progress record, with the totals
// walked so far (the whole is known only at the end).
class WalkProgress {
public:
    WalkProgress(const StageItem& item, const NodeContext& ctx) : item_(item), ctx_(ctx), start_(Clock::now()) {}

    void segment_done(const WalkedTransfer& so_far)
    {
        const auto now = Clock::now();
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        if (ctx_.rank != 0)
            return;
        const bool first_bytes = so_far.bytes > 0 && !bytes_recorded_;
        bytes_recorded_ = bytes_recorded_ || so_far.bytes > 0;
        if (std::chrono::duration<double>(now - last_).count() < ctx_.progress_interval) {
            // The first bytes at once, without a line (as stage_steps' progress).
            if (first_bytes)
                record(kStagingState, 0, so_far, elapsed);
            return;
        }
        last_ = now;
        sayf("%s: %s in %llu files staged, %s; still walking the source", item_.dataset.name.c_str(),
             format_size(so_far.bytes).c_str(), static_cast<unsigned long long>(so_far.files),
             format_rate(so_far.bytes, elapsed).c_str());
        record(kStagingState, 0, so_far, elapsed);  // the total is not known yet: no percentage
    }

    void done(const WalkedTransfer& all) const
    {
        if (ctx_.rank == 0)
            record(kReadyState, all.bytes, all, std::chrono::duration<double>(Clock::now() - start_).count());
    }

private:
    void record(const char* state, std::uint64_t total, const WalkedTransfer& figures, double elapsed) const
    {
        std::string problem;
        write_progress(item_, ctx_, {state, total, figures.bytes, figures.files, elapsed, 0, {}, {}}, problem);
    }

    const StageItem& item_;
    const NodeContext& ctx_;
    Clock::time_point start_, last_ = start_;
    bool bytes_recorded_ = false;
};

void add_totals(WalkedTransfer& totals, const Plan& segment)
{
    totals.bytes += segment.total_bytes();
    totals.files += segment.file_count();
    totals.entries += segment.entry_count();
}

// How large segments grow.  Into a shared tier, each no more than the
// walk gets through in 0.1 s, not 0.5: its opens, on the one node of a
// mover job, go slower than the walk, so with larger segments a file was
// opened more than a second after its stat, and the file system looked it
// up again (bench/mover's 20,000-file tree, the mover job's whole step:
// 1.55x of the read-once limit with 0.5 s, 1.15x with 0.1 s; docs/
// performance.md).  A node tier keeps 0.5 s: its ring pays for each
// segment (bench/manifest-tree without a manifest: 1.17x with 0.5 s,
// 1.25x with 0.15 s).
SegmentLimits segment_limits(bool shared)
{
    SegmentLimits limits;
    if (shared)
        limits.seconds = 0.1;
    return limits;
}

// A shared tier's room for the next segment, with those before it.  A
// refusal is the source's size against the tier, not a copy cut off: every
// rank agrees first, and rank 0 removes what was written (walk_refused)
// before any rank throws, so that no rank's exit kills rank 0 mid-way.
void check_shared_space(const StageItem& item, const NodeContext& ctx, const Fd& job_dir, const DatasetLayout& layout,
                        const Plan& segment, const WalkedTransfer& totals, const WalkHooks& hooks)
{
    std::string refused;
    try {
        check_space(item, job_dir, layout.tier_dir, segment, {totals.bytes, totals.entries});
    } catch (const Error& e) {
        refused = e.what();
    }
    if (all_ranks(ctx.comm, refused.empty()))
        return;
    if (ctx.rank == 0 && hooks.walk_refused)
        hooks.walk_refused();
    quiet_barrier(ctx.comm);
    throw Error(refused.empty() ? "another node found no room in tier " + quoted(item.tier.name) : refused);
}

// One segment from the source into a shared tier's one copy, each rank
// its own chunks (rank 0 makes the directories and, but for the first
// segment's, gives them their modes and times; it tells
// hooks.segment_laid_out once the directories are there, before any
// file's byte).  Returns the bytes this rank read.
std::uint64_t move_shared_segment(const Plan& plan, TreeWriter& writer, bool first, const NodeContext& ctx,
                                  const ExchangeOptions& options, const WalkHooks& hooks)
{
    make_skeleton(writer, true, ctx, [&] {
        if (hooks.segment_laid_out && ctx.rank == 0)
            hooks.segment_laid_out(plan);
    });
    const auto chunks = layout_chunks(plan, options.chunk_size);
    const auto no_progress = [](std::size_t, std::uint64_t) {};
    const std::uint64_t read =
        copy_own_chunks(chunks, plan, writer, ctx.rank, ctx.size, options, no_progress).bytes_read;
    quiet_barrier(ctx.comm);
    writer.finish_split_files();
    quiet_barrier(ctx.comm);
    stage_phases().lap(Phase::Transfer);
    if (!first && ctx.rank == 0)
        writer.finish();
    return read;
}

// The segments of a tree walked while it moves to a node tier, fed to one
// exchange (exchange_parts).  An exchange per segment emptied the pipeline
// at every segment's end (the next segment's first read waited for this
// one's last write): from a cold source, a tree of 1.28 M small files took
// its read time plus its write time (issue 58).  Here, on the exchange's
// MPI thread and never waiting, the next segment is broadcast from rank
// 0's walk, checked against the tier's room, its directories made and its
// chunks laid out while the one before moves, one segment ahead.  A
// segment is finished (its directories' modes and times) once its every
// chunk is written; the first one's directories, which hold later
// segments, last (finish).
class WalkedFeed : public PartFeed {
public:
    WalkedFeed(const StageItem& item, const NodeContext& ctx, SegmentedWalk* walk, const ExchangeOptions& options,
               const DatasetLayout& layout, const Fd& job_dir, const std::string& dest, const WriterOptions& writing,
               WalkProgress& progress)
        : item_(item), options_(options), layout_(layout), job_dir_(job_dir), dest_(dest), writing_(writing),
          progress_(progress), broadcast_(item, ctx, walk)
    {
    }

    bool advance() override
    {
        if (ready_ || ended_)
            return false;
        Plan plan;
        const SegmentBroadcast::Got got = broadcast_.poll(plan);
        if (got == SegmentBroadcast::Got::NotYet)
            return false;
        if (got == SegmentBroadcast::Got::End)
            ended_ = true;
        else
            ready_ = prepare(std::move(plan));
        return true;
    }

    Poll poll(ExchangePart& part) override
    {
        advance();
        if (!ready_)
            return ended_ ? Poll::End : Poll::NotYet;
        given_.push_back(std::move(ready_));
        const Segment& segment = *given_.back();
        part = {&segment.plan, segment.writer.get(), &segment.chunks};
        return Poll::Part;
    }

    void done(const ExchangePart& part) override
    {
        std::unique_ptr<Segment> segment = std::move(given_.front());
        given_.pop_front();
        if (&segment->plan != part.plan)
            throw Error("internal error: the exchange finished a segment out of order");
        add_totals(totals_, segment->plan);
        if (top_)
            segment->writer->finish();
        else
            top_ = std::move(segment);
        progress_.segment_done(totals_);
    }

    // Once the exchange is over: the first segment's directories get their
    // modes and times.  What was moved.
    WalkedTransfer finish()
    {
        if (top_)
            top_->writer->finish();
        return totals_;
    }

private:
    struct Segment {
        Plan plan;
        std::unique_ptr<TreeWriter> writer;
        std::vector<Chunk> chunks;
    };

    // Room for the segment, counting what the segments before still have
    // to write as taken; its directories; its chunks.
    std::unique_ptr<Segment> prepare(Plan plan)
    {
        TreeWriter::Left left;
        for (const auto& segment : given_) {
            const TreeWriter::Left more = segment->writer->left_to_write();
            left.bytes += more.bytes;
            left.files += more.files;
        }
        before_.bytes_pending = left.bytes;
        before_.entries_pending = left.files;
        check_space(item_, job_dir_, layout_.tier_dir, plan, before_);
        before_.bytes += plan.total_bytes();
        before_.entries += plan.entry_count();
        auto segment = std::make_unique<Segment>();
        segment->plan = std::move(plan);
        segment->writer = std::make_unique<TreeWriter>(segment->plan, dest_, writing_);
        segment->writer->create_skeleton();
        segment->chunks = layout_chunks(segment->plan, options_.chunk_size);
        return segment;
    }

    const StageItem& item_;
    const ExchangeOptions& options_;
    const DatasetLayout& layout_;
    const Fd& job_dir_;
    const std::string dest_;
    const WriterOptions writing_;
    WalkProgress& progress_;
    SegmentBroadcast broadcast_;

    WrittenBefore before_;                        // the segments prepared so far
    std::unique_ptr<Segment> ready_;              // prepared, not given to the exchange yet
    std::deque<std::unique_ptr<Segment>> given_;  // given, not done
    bool ended_ = false;
    std::unique_ptr<Segment> top_;  // the first segment: its directories hold the later ones
    WalkedTransfer totals_;         // the segments done
};

// A node tier: every segment through one exchange (WalkedFeed).
WalkedTransfer exchange_walked(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                               const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                               SegmentedWalk* walk, const WriterOptions& writing,
                               const std::shared_ptr<WalkProgress>& progress)
{
    WalkedTransfer totals;
    {
        WalkedFeed feed(item, ctx, walk, options, layout, job_dir, here.partial_dir, writing, *progress);
        const auto no_progress = [](std::size_t, std::uint64_t) {};
        totals.bytes_read = exchange_parts(feed, options, no_progress, ctx.comm).bytes_read;
        stage_phases().lap(Phase::Transfer);
        const WalkedTransfer moved = feed.finish();
        totals.bytes = moved.bytes;
        totals.files = moved.files;
        totals.entries = moved.entries;
    }
    stage_phases().lap(Phase::Finish);
    totals.done = [progress, totals] { progress->done(totals); };
    return totals;
}
}  // namespace

bool walks_while_transferring(const StageItem& item, const NodeContext& ctx, bool copy_there)
{
    struct stat source {};
    policy::WalkFacts facts;
    facts.mode = item.dataset.mode;
    facts.scope = item.tier.scope;
    facts.cleanup = item.tier.cleanup;
    const Format declared = item.dataset.known_format();
    facts.source_is_dir = (declared == Format::Auto || declared == Format::Dir) &&
                          ::stat(item.dataset.source.c_str(), &source) == 0 && S_ISDIR(source.st_mode);
    facts.has_manifest = item.dataset.from_catalog && !ctx.manifest_dir.empty() &&
                         name_exists(manifest_path(ctx.manifest_dir, item.dataset.name));
    facts.copy_there = copy_there;
    return policy::walks_while_transferring(facts);
}

WalkedTransfer transfer_while_walking(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                                      const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                                      const WalkHooks& hooks)
{
    WriterOptions writer_options = writer_options_for(item);
    std::unique_ptr<SegmentedWalk> walk;
    if (ctx.rank == 0)
        // 32 threads, as many as a rank's reads open at once by default
        // (DLSTAGE_OPENS): with 16, each slice of a large directory (twice
        // the one before) took longer to walk than the one before took to
        // read, and the reads waited for it (bench/latency --smoke: 1.31-
        // 1.32x of the open-and-read limit; 1.23-1.37x, median 1.27x,
        // with 32).
        walk = std::make_unique<SegmentedWalk>(item.dataset, 32, segment_limits(writer_options.shared));
    if ((!writer_options.shared || ctx.rank == 0) && mkdir(here.partial_dir.c_str(), 0700) != 0)
        throw_cannot("create", layout.partial_dir, errno);
    writer_options.dest_exists = true;
    writer_options.piece_written = hooks.piece_written;
    const auto progress = std::make_shared<WalkProgress>(item, ctx);
    stage_phases().lap(Phase::Prepare);
    if (!writer_options.shared)
        return exchange_walked(item, ctx, options, layout, here, job_dir, walk.get(), writer_options, progress);

    // The first segment's directories hold later segments' slices and
    // units: its writer gives them their modes and times last.
    Plan top;
    std::unique_ptr<TreeWriter> top_writer;
    WalkedTransfer totals;
    for (bool first = true;; first = false) {
        Plan segment;
        bool more = false;
        try {
            more = broadcast_segment(item, ctx, walk.get(), segment);
        } catch (const Error&) {
            if (hooks.walk_refused)  // only rank 0 walks, and throws
                hooks.walk_refused();
            throw;
        }
        if (!more)
            break;
        stage_phases().lap(Phase::Plan);
        check_shared_space(item, ctx, job_dir, layout, segment, totals, hooks);
        if (first)
            top = std::move(segment);
        Plan& plan = first ? top : segment;
        auto writer = std::make_unique<TreeWriter>(plan, here.partial_dir, writer_options);
        totals.bytes_read += move_shared_segment(plan, *writer, first, ctx, options, hooks);
        if (first)
            top_writer = std::move(writer);
        if (hooks.segment_done && ctx.rank == 0)
            hooks.segment_done(plan);
        add_totals(totals, plan);
        stage_phases().lap(Phase::Finish);
        progress->segment_done(totals);
    }
    if (top_writer && ctx.rank == 0)
        top_writer->finish();
    stage_phases().lap(Phase::Finish);
    totals.done = [progress, totals] { progress->done(totals); };
    return totals;
}

}  // namespace dlstage::stager
