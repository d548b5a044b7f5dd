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
#include "stager/transfer/mpi_poll.hpp"
#include "stager/transfer/own_chunks.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace dlstage::stager {

namespace {
using Clock = std::chrono::steady_clock;

// Before the first segment: nothing written, and the walk goes on, so each
// segment's space check knows only the least the tree needs.
WrittenBefore nothing_walked_yet()
{
    WrittenBefore none;
    none.walk_goes_on = true;
    return none;
}

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

// A segment as a transfer holds it: its plan, a writer on that plan, and
// its chunks.
struct HeldSegment {
    Plan plan;
    std::unique_ptr<TreeWriter> writer;
    std::vector<Chunk> chunks;

    // Takes the plan, with its writer into dest and its chunks.
    void hold(Plan given, const std::string& dest, const WriterOptions& writing, std::uint64_t chunk_size)
    {
        plan = std::move(given);
        writer = std::make_unique<TreeWriter>(plan, dest, writing);
        chunks = layout_chunks(plan, chunk_size);
    }
    ExchangePart exchange_part() const { return {&plan, writer.get(), &chunks}; }
};

// The segments of a tree walked while it moves to a node tier, fed to one
// exchange (exchange_parts).  An exchange per segment emptied the pipeline
// at every segment's end (the next segment's first read waited for this
// one's last write): from a cold source, a tree of 1.28 M small files took
// its read time plus its write time (issue 58).  Here, on the exchange's
// MPI thread and never waiting for another rank (a segment's statvfs,
// directories and their modes are this thread's own), the next segment
// is broadcast from rank 0's walk, checked against the tier's room, its
// directories made and its chunks laid out while the one before moves,
// one segment ahead.  A segment is finished (its directories' modes and
// times) once its every chunk is written; the first one's directories,
// which hold later segments, last (finish).
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
        part = segment.exchange_part();
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
    using Segment = HeldSegment;

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
        segment->hold(std::move(plan), dest_, writing_, options_.chunk_size);
        segment->writer->create_skeleton();
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

    WrittenBefore before_ = nothing_walked_yet();  // the segments prepared so far
    std::unique_ptr<Segment> ready_;               // prepared, not given to the exchange yet
    std::deque<std::unique_ptr<Segment>> given_;   // given, not done
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

// A shared tier: every rank copies its own chunks of every segment into the
// one copy as the segments come, one pool of threads for them all
// (OwnChunkCopier).  Rank 0 checks a segment against the tier's room and
// makes its directories before it sends it (SegmentBroadcast's
// before_send): no rank waits for another before it writes.  A segment is
// finished once every rank has written its chunks of it: a nonblocking
// barrier, then each rank finishes the files whose last piece it wrote,
// a second one, then rank 0 gives its directories their modes and times
// (the first segment's, which hold later ones, last) and tells
// segment_done.  A segment at a time, with three barriers between
// (issue 58), emptied the threads at every segment's end.
class SharedWalkedCopy {
public:
    SharedWalkedCopy(const StageItem& item, const NodeContext& ctx, SegmentedWalk* walk, const ExchangeOptions& options,
                     const DatasetLayout& layout, const Fd& job_dir, std::string dest, const WriterOptions& writing,
                     const WalkHooks& hooks, WalkProgress& progress)
        : item_(item), ctx_(ctx), options_(options), layout_(layout), job_dir_(job_dir), dest_(std::move(dest)),
          writing_(writing), hooks_(hooks), progress_(progress),
          broadcast_(item, ctx, walk, {[this](const Plan& plan) { lay_out(plan); }, true}),
          copier_(ctx.rank, ctx.size, options)
    {
        // The barriers have a communicator of their own: the segments'
        // broadcasts on ctx.comm come in another order on every rank.
        MPI_Comm_dup(ctx.comm, &barriers_);
    }
    ~SharedWalkedCopy()
    {
        copier_.abandon();  // its threads write into segments_, which go first
        if (clean_end_)
            MPI_Comm_free(&barriers_);  // else requests may be open on it: the process is ending
    }
    SharedWalkedCopy(const SharedWalkedCopy&) = delete;
    SharedWalkedCopy& operator=(const SharedWalkedCopy&) = delete;

    WalkedTransfer run()
    {
        IdleBackoff idle;
        while (!(ended_ && segments_.empty())) {
            copier_.rethrow_failure();
            idle.after(take_segment() | advance_segments());
        }
        copier_.finish();
        stage_phases().lap(Phase::Transfer);
        if (top_ && ctx_.rank == 0)
            top_->writer->finish();
        clean_end_ = true;
        totals_.bytes_read = copier_.bytes_read();
        return totals_;
    }

private:
    struct Segment : HeldSegment {
        std::size_t part = 0;  // its id in the copier
        enum { Writing, AllWritten, AllFinished } step = Writing;
        MPI_Request request = MPI_REQUEST_NULL;
    };

    // Rank 0, before a segment goes out: room for it, with what went out
    // before and is not written yet counted as taken (all of a segment
    // until every rank wrote its share: rank 0 does not see the others'
    // progress, so a nearly full tier may refuse a segment or two early);
    // its directories; segment_laid_out.
    void lay_out(const Plan& plan)
    {
        WrittenBefore before = sent_;
        for (const auto& segment : segments_)
            if (segment->step != Segment::AllFinished) {
                before.bytes_pending += segment->plan.total_bytes();
                before.entries_pending += segment->plan.entry_count();
            }
        check_space(item_, job_dir_, layout_.tier_dir, plan, before);
        // Past the check, a failure is the tier's (a directory not made, a
        // record not written), not the source's: what was written stays to
        // go on from.
        failed_on_tier_ = true;
        TreeWriter(plan, dest_, writing_).create_skeleton();
        if (hooks_.segment_laid_out)
            hooks_.segment_laid_out(plan);
        failed_on_tier_ = false;
        sent_.bytes += plan.total_bytes();
        sent_.entries += plan.entry_count();
    }

    // The next segment, given to the copier; at most two of this rank's
    // are being written at once (a walk far ahead of the copy would hold
    // its segments in memory).
    bool take_segment()
    {
        if (ended_)
            return false;
        std::size_t writing = 0;
        for (const auto& segment : segments_)
            writing += segment->step == Segment::Writing ? 1 : 0;
        if (writing >= 2)
            return false;
        Plan plan;
        switch (broadcast_.poll(plan)) {
        case SegmentBroadcast::Got::NotYet: return false;
        case SegmentBroadcast::Got::End: ended_ = true; return true;
        case SegmentBroadcast::Got::Refused: refuse();
        case SegmentBroadcast::Got::Segment: break;
        }
        auto segment = std::make_unique<Segment>();
        segment->hold(std::move(plan), dest_, writing_, options_.chunk_size);
        segment->part = copier_.add(segment->exchange_part());
        segments_.push_back(std::move(segment));
        return true;
    }

    // The segments' barriers, posted in the same order on every rank
    // (written 0, finished 0, written 1, ...), and the segments done.
    bool advance_segments()
    {
        bool progressed = false;
        for (auto& segment : segments_) {
            if (segment->step == Segment::Writing) {
                if (!copier_.part_done(segment->part))
                    break;
                MPI_Ibarrier(barriers_, &segment->request);
                segment->step = Segment::AllWritten;
                progressed = true;
            }
            if (segment->step == Segment::AllWritten) {
                if (!request_done(segment->request))
                    break;
                segment->writer->finish_split_files();
                MPI_Ibarrier(barriers_, &segment->request);
                segment->step = Segment::AllFinished;
                progressed = true;
            }
        }
        while (!segments_.empty() && segments_.front()->step == Segment::AllFinished &&
               request_done(segments_.front()->request)) {
            done(std::move(segments_.front()));
            segments_.pop_front();
            progressed = true;
        }
        return progressed;
    }

    void done(std::unique_ptr<Segment> segment)
    {
        if (ctx_.rank == 0) {
            if (top_)
                segment->writer->finish();
            if (hooks_.segment_done)
                hooks_.segment_done(segment->plan);
        }
        add_totals(totals_, segment->plan);
        progress_.segment_done(totals_);
        if (!top_)
            top_ = std::move(segment);
    }

    // The walk refused the source, the tier has no room for it, or rank 0
    // could not lay a segment out: every rank stops writing and has rank
    // 0's reason, rank 0 removes what was written (walk_refused; not for a
    // failure of the tier's), and only then does any rank throw, so that no
    // rank's exit has the launcher kill rank 0 mid-removal.
    [[noreturn]] void refuse()
    {
        copier_.abandon();
        std::string why;
        if (ctx_.rank == 0)
            why = what_of(broadcast_.refusal());
        why = broadcast_text(ctx_.comm, 0, why);
        quiet_barrier(ctx_.comm);  // a broadcast's root may be done before the others have stopped
        if (ctx_.rank == 0 && hooks_.walk_refused && !failed_on_tier_)
            hooks_.walk_refused();
        quiet_barrier(ctx_.comm);
        if (ctx_.rank == 0)
            std::rethrow_exception(broadcast_.refusal());
        throw Error("the node walking the source stopped: " + why);
    }

    static std::string what_of(const std::exception_ptr& thrown)
    {
        try {
            std::rethrow_exception(thrown);
        } catch (const std::exception& e) {
            return e.what();
        } catch (...) {
            return "an unknown error";
        }
    }

    const StageItem& item_;
    const NodeContext& ctx_;
    const ExchangeOptions& options_;
    const DatasetLayout& layout_;
    const Fd& job_dir_;
    const std::string dest_;
    const WriterOptions writing_;
    const WalkHooks& hooks_;
    WalkProgress& progress_;
    SegmentBroadcast broadcast_;
    OwnChunkCopier copier_;
    MPI_Comm barriers_ = MPI_COMM_NULL;
    bool clean_end_ = false;

    bool failed_on_tier_ = false;                    // rank 0: laying a segment out failed past its check
    WrittenBefore sent_ = nothing_walked_yet();      // rank 0: the segments sent so far
    std::deque<std::unique_ptr<Segment>> segments_;  // taken, not done, in order
    bool ended_ = false;
    std::unique_ptr<Segment> top_;  // the first segment: its directories hold the later ones
    WalkedTransfer totals_;         // the segments done
};
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

    WalkedTransfer totals = SharedWalkedCopy(item, ctx, walk.get(), options, layout, job_dir, here.partial_dir,
                                             writer_options, hooks, *progress)
                                .run();
    stage_phases().lap(Phase::Finish);
    totals.done = [progress, totals] { progress->done(totals); };
    return totals;
}

}  // namespace dlstage::stager
