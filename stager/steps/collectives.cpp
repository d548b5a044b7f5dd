#include "stager/steps/collectives.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/periodic.hpp"
#include "stager/plan/source_check.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/transfer/io_activity.hpp"

namespace dlstage::stager {

using Clock = std::chrono::steady_clock;

namespace {
// One MPI message holds at most INT_MAX bytes: big blocks go in steps.
constexpr std::size_t kStep = 1u << 30;
}  // namespace

// Both wait quietly: a rank may arrive long before the others (a node
// cache's rank that took its lock while another waits 2 s for one).
bool all_ranks(MPI_Comm comm, bool mine)
{
    int in = mine ? 1 : 0, out = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm, &request);
    quiet_wait(request);
    return out == 1;
}

void flags_over_ranks(MPI_Comm comm, std::vector<char>& flags)
{
    for (std::size_t off = 0; off < flags.size(); off += kStep) {
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Iallreduce(MPI_IN_PLACE, flags.data() + off, static_cast<int>(std::min(kStep, flags.size() - off)),
                       MPI_BYTE, MPI_BOR, comm, &request);
        quiet_wait(request);
    }
}

std::uint64_t reduce_over_ranks(MPI_Comm comm, std::uint64_t mine, MPI_Op op)
{
    unsigned long long in = mine, out = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, op, comm, &request);
    quiet_wait(request);
    return out;
}

std::vector<std::uint64_t> values_over_ranks(MPI_Comm comm, const std::vector<std::uint64_t>& mine)
{
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    int count = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(ranks)), starts(static_cast<std::size_t>(ranks));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm, &request);
    quiet_wait(request);
    int total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        starts[r] = total;
        total += counts[r];
    }
    std::vector<std::uint64_t> all(static_cast<std::size_t>(total));
    MPI_Iallgatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), starts.data(), MPI_UINT64_T, comm,
                    &request);
    quiet_wait(request);
    return all;
}

std::int64_t reduce_min(MPI_Comm comm, std::int64_t mine)
{
    long long in = mine, out = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&in, &out, 1, MPI_LONG_LONG, MPI_MIN, comm, &request);
    quiet_wait(request);
    return out;
}

void quiet_wait(MPI_Request& request)
{
    // Open MPI's blocking collectives spin a core: ranks that wait long (for
    // a lock held by another job, for rank 0's walk or extraction) would
    // take it from rank 0 and the job's tasks.  Checked every 2 ms.
    for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;)
        usleep(2000);
}

std::string broadcast_text(MPI_Comm comm, int root, const std::string& text)
{
    char line[1024] = {};
    std::snprintf(line, sizeof line, "%s", text.c_str());
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(line, sizeof line, MPI_CHAR, root, comm, &request);
    quiet_wait(request);
    return line;
}

std::vector<std::string> texts_over_ranks(MPI_Comm comm, const std::string& mine)
{
    constexpr std::size_t kWidth = 256;
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    char line[kWidth] = {};
    std::snprintf(line, sizeof line, "%s", mine.c_str());
    std::vector<char> all(kWidth * static_cast<std::size_t>(ranks));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallgather(line, static_cast<int>(kWidth), MPI_CHAR, all.data(), static_cast<int>(kWidth), MPI_CHAR, comm,
                   &request);
    quiet_wait(request);
    std::vector<std::string> texts;
    for (int rank = 0; rank < ranks; ++rank)
        texts.emplace_back(all.data() + kWidth * static_cast<std::size_t>(rank));
    return texts;
}

void quiet_barrier(MPI_Comm comm)
{
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &request);
    quiet_wait(request);
}

namespace {
// CPU time (user + system) this process has used so far, in microseconds.
std::uint64_t cpu_microseconds()
{
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    const auto us = [](const timeval& t) { return static_cast<std::uint64_t>(t.tv_sec) * 1000000 + t.tv_usec; };
    return us(usage.ru_utime) + us(usage.ru_stime);
}

// This process's peak resident memory so far.
std::uint64_t peak_rss_bytes()
{
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

namespace {
// In steps of kStep.  The other ranks wait through rank 0's whole walk
// here: quietly.
void bcast_from_rank0(const NodeContext& ctx, void* data, std::size_t size)
{
    for (std::size_t off = 0; off < size; off += kStep) {
        MPI_Request request = MPI_REQUEST_NULL;
        MPI_Ibcast(static_cast<char*>(data) + off, static_cast<int>(std::min(kStep, size - off)), MPI_BYTE, 0, ctx.comm,
                   &request);
        quiet_wait(request);
    }
}

// Rank 0's plan on every rank.  Rank 0 keeps the plan it made; the others
// receive its two blocks straight into their own (stager/plan/plan.hpp): no
// rank holds a second, serialized copy of a million entries.
Plan share_plan(const NodeContext& ctx, Plan plan)
{
    const auto bcast = [&ctx](void* data, std::size_t size) { bcast_from_rank0(ctx, data, size); };
    std::string header;
    if (ctx.rank == 0)
        header = wire_header(plan);
    unsigned long long size = header.size();
    bcast(&size, sizeof size);
    header.resize(size);
    bcast(header.data(), header.size());
    if (ctx.rank == 0) {
        // MPI_Bcast only reads the root's buffer.
        bcast(const_cast<EntryList::Record*>(plan.entries.records().data()),
              plan.entries.records().size() * sizeof(EntryList::Record));
        bcast(const_cast<char*>(plan.entries.arena().data()), plan.entries.arena().size());
        return plan;
    }
    PlanReceiver in = receive_header(header);
    bcast(in.records.data(), in.records.size() * sizeof(EntryList::Record));
    bcast(in.arena.data(), in.arena.size());
    in.adopt_blocks();
    return std::move(in.plan);
}
}  // namespace

Plan broadcast_plan(const StageItem& item, const NodeContext& ctx, PlanFrom from)
{
    Plan plan;
    if (ctx.rank == 0) {
        std::string note;
        plan = from == PlanFrom::Walk ? build_plan(item.dataset) : plan_for(ctx.manifest_dir, item.dataset, note);
        if (!note.empty())
            say(note);
        else if (plan.from_manifest)
            sayf("%s: planned from its manifest (no walk of the source)", item.dataset.name.c_str());
    }
    return share_plan(ctx, std::move(plan));
}

// One segment's broadcast under way: its size (0: the walk is done;
// kRefusedSize: rank 0 refused the source), then its header, then its
// blocks, each a nonblocking broadcast.
struct SegmentBroadcast::InFlight {
    unsigned long long header_size = 0;
    std::string header;
    Plan plan;                                          // rank 0's
    PlanReceiver receiver;                              // the others'
    std::vector<std::pair<char*, std::size_t>> blocks;  // still to broadcast, in steps under INT_MAX
    MPI_Request request = MPI_REQUEST_NULL;
    enum { Size, Header, Blocks } step = Size;
};

namespace {
constexpr unsigned long long kRefusedSize = ~0ULL;
}  // namespace

SegmentBroadcast::SegmentBroadcast(const StageItem& item, const NodeContext& ctx, SegmentedWalk* walk,
                                   SegmentSending rank0)
    : item_(item), ctx_(ctx), walk_(walk), rank0_(std::move(rank0))
{
}

SegmentBroadcast::~SegmentBroadcast()
{
    if (now_ && now_->request != MPI_REQUEST_NULL)
        (void)now_.release();
}

bool SegmentBroadcast::post_next_block()
{
    auto& blocks = now_->blocks;
    while (!blocks.empty() && blocks.front().second == 0)
        blocks.erase(blocks.begin());
    if (blocks.empty())
        return false;
    auto& [data, size] = blocks.front();
    const std::size_t step = std::min(kStep, size);
    MPI_Ibcast(data, static_cast<int>(step), MPI_BYTE, 0, ctx_.comm, &now_->request);
    data += step;
    size -= step;
    return true;
}

bool SegmentBroadcast::take_from_walk(InFlight& next)
{
    next.plan.format = Format::Dir;
    next.plan.source_root = item_.dataset.source;
    try {
        const SegmentedWalk::Next walked = walk_->try_next(next.plan.entries);
        if (walked == SegmentedWalk::Next::NotYet)
            return false;
        if (walked == SegmentedWalk::Next::Segment) {
            if (rank0_.before_send)
                rank0_.before_send(next.plan);
            next.header = wire_header(next.plan);
        }
        next.header_size = next.header.size();
    } catch (...) {
        if (!rank0_.agree_on_refusal)
            throw;
        refusal_ = std::current_exception();
        next.header_size = kRefusedSize;
    }
    return true;
}

SegmentBroadcast::Got SegmentBroadcast::poll(Plan& segment)
{
    if (ended_)
        return refused_ ? Got::Refused : Got::End;
    if (!now_) {
        auto next = std::make_unique<InFlight>();
        if (ctx_.rank == 0 && !take_from_walk(*next))
            return Got::NotYet;
        now_ = std::move(next);
        MPI_Ibcast(&now_->header_size, 1, MPI_UNSIGNED_LONG_LONG, 0, ctx_.comm, &now_->request);
    }
    for (int done = 0;;) {
        MPI_Test(&now_->request, &done, MPI_STATUS_IGNORE);
        if (!done)
            return Got::NotYet;
        InFlight& now = *now_;
        if (now.step == InFlight::Size) {
            if (now.header_size == 0 || now.header_size == kRefusedSize) {
                refused_ = now.header_size == kRefusedSize;
                now_.reset();
                ended_ = true;
                return refused_ ? Got::Refused : Got::End;
            }
            now.header.resize(now.header_size);
            now.step = InFlight::Header;
            MPI_Ibcast(now.header.data(), static_cast<int>(now.header.size()), MPI_CHAR, 0, ctx_.comm, &now.request);
            continue;
        }
        if (now.step == InFlight::Header) {
            EntryList* blocks_of = &now.plan.entries;
            if (ctx_.rank != 0)
                now.receiver = receive_header(now.header);
            // MPI_Ibcast only reads the root's buffers.
            auto& records = ctx_.rank == 0 ? const_cast<std::vector<EntryList::Record>&>(blocks_of->records())
                                           : now.receiver.records;
            auto& arena = ctx_.rank == 0 ? const_cast<std::string&>(blocks_of->arena()) : now.receiver.arena;
            now.blocks = {{reinterpret_cast<char*>(records.data()), records.size() * sizeof(EntryList::Record)},
                          {arena.data(), arena.size()}};
            now.step = InFlight::Blocks;
        }
        if (post_next_block())
            continue;
        if (ctx_.rank == 0) {
            segment = std::move(now.plan);
        } else {
            now.receiver.adopt_blocks();
            segment = std::move(now.receiver.plan);
        }
        now_.reset();
        return Got::Segment;
    }
}

// Rank 0 plans with a walk of the source: on a loaded parallel file system
// a million files take minutes, and the job output should say what is
// going on meanwhile.  Every progress interval, until planning is done,
// rank 0 says how many entries the walk has found so far (counted by the
// walk itself, further down: entries_walked()).
Plan plan_saying_progress(const StageItem& item, const NodeContext& ctx, PlanFrom from)
{
    const std::uint64_t before = entries_walked();
    std::function<void()> say_count;
    if (ctx.rank == 0)
        say_count = [&item, before] {
            sayf("%s: walking %s: %llu entries found so far", item.dataset.name.c_str(), item.dataset.source.c_str(),
                 static_cast<unsigned long long>(entries_walked() - before));
        };
    const Periodic progress(std::chrono::duration<double>(ctx.progress_interval), std::move(say_count));
    return broadcast_plan(item, ctx, from);
}

bool manifest_unchecked(const StageItem& item, const NodeContext& ctx, const Plan& plan)
{
    const bool from_manifest = reduce_over_ranks(ctx.comm, ctx.rank == 0 && plan.from_manifest ? 1 : 0, MPI_MAX) != 0;
    return from_manifest && !item.dataset.immutable;
}

bool plan_still_holds(const StageItem& item, const NodeContext& ctx, const Plan& plan)
{
    if (!manifest_unchecked(item, ctx, plan))
        return true;
    const SourceDrift drift = drift_over_ranks(ctx.comm, ctx.rank, check_source(plan, ctx.rank, ctx.size));
    if (drift.changed == 0)
        return true;
    say_stale_manifest(item, ctx, drift);
    return false;
}

SourceDrift drift_over_ranks(MPI_Comm comm, int rank, const SourceDrift& mine)
{
    SourceDrift all;
    all.checked = reduce_over_ranks(comm, mine.checked, MPI_SUM);
    all.changed = reduce_over_ranks(comm, mine.changed, MPI_SUM);
    if (all.changed == 0)
        return all;
    // The example: the lowest rank's that found one.
    const auto first =
        static_cast<int>(reduce_over_ranks(comm, mine.changed > 0 ? static_cast<std::uint64_t>(rank) : ~0ull, MPI_MIN));
    all.example = broadcast_text(comm, first, mine.example);
    return all;
}

void say_stale_manifest(const StageItem& item, const NodeContext& ctx, const SourceDrift& drift)
{
    if (ctx.rank == 0)
        sayf("manifest of %s is older than its source (%llu files changed in place since the scan, e.g. %s): "
             "planning from a walk; run 'dlstage catalog scan %s'",
             item.dataset.name.c_str(), static_cast<unsigned long long>(drift.changed), drift.example.c_str(),
             item.dataset.name.c_str());
}

namespace {
// The reading and writing of the node that spent longest at either (or
// both), on every rank; collective over comm.
IoSeconds busiest_io(MPI_Comm comm)
{
    const IoSeconds mine = stage_io().seconds();
    const auto us = [](double seconds) { return static_cast<std::uint64_t>(seconds * 1e6); };
    const std::vector<std::uint64_t> all = values_over_ranks(comm, {us(mine.reading), us(mine.writing), us(mine.both)});
    IoSeconds busiest;
    double longest = -1;
    for (std::size_t i = 0; i + 2 < all.size(); i += 3) {
        const IoSeconds node{static_cast<double>(all[i]) / 1e6, static_cast<double>(all[i + 1]) / 1e6,
                             static_cast<double>(all[i + 2]) / 1e6};
        const double busy = node.reading + node.writing - node.both;
        if (busy > longest) {
            longest = busy;
            busiest = node;
        }
    }
    return busiest;
}

// How the copies lie over the nodes, for the summary line.
const char* placement_words(const StageItem& item)
{
    if (item.tier.shared())
        return "(one shared copy) by";
    return item.split ? "split over" : "on";
}
}  // namespace

void say_transferred(const StageItem& item, const NodeContext& ctx, std::uint64_t total_bytes, std::uint64_t bytes_read,
                     Clock::time_point start, std::uint64_t cpu_start)
{
    stage_phases().lap(Phase::Publish);
    PhaseSeconds slowest{};
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(stage_phases().seconds().data(), slowest.data(), static_cast<int>(kPhaseCount), MPI_DOUBLE, MPI_MAX,
                   ctx.comm, &request);
    quiet_wait(request);
    const std::uint64_t read = reduce_over_ranks(ctx.comm, bytes_read, MPI_SUM);
    const std::uint64_t peak_rss = reduce_over_ranks(ctx.comm, peak_rss_bytes(), MPI_MAX);
    const double cpu_seconds =
        static_cast<double>(reduce_over_ranks(ctx.comm, cpu_microseconds() - cpu_start, MPI_SUM)) / 1e6;
    const IoSeconds io = busiest_io(ctx.comm);
    if (ctx.rank != 0 || ctx.quiet)
        return;
    const bool shared = item.tier.shared();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double ratio = total_bytes ? static_cast<double>(read) / static_cast<double>(total_bytes) : 1.0;
    sayf("staged %s to %s %s %d nodes in %.2f s (%s%s); source bytes read %s (%.2fx); "
         "peak memory per rank %s; cpu %.1f s over all nodes",
         item.dataset.name.c_str(), item.tier.name.c_str(), placement_words(item), ctx.size, seconds,
         format_rate(total_bytes, seconds).c_str(),
         shared       ? ""
         : item.split ? " in all"
                      : " per node",
         format_size(read).c_str(), ratio, format_size(peak_rss).c_str(), cpu_seconds);
    sayf("%s: time by phase (slowest node): %s", item.dataset.name.c_str(), phases_text(slowest).c_str());
    // Whether reading the source and writing the files overlapped: a
    // staging that took their sum shows "both at once" near zero.
    if (io.reading > 0 || io.writing > 0)
        sayf("%s: reading and writing (busiest node): %s", item.dataset.name.c_str(), io_text(io).c_str());
}

std::uint64_t cpu_now()
{
    return cpu_microseconds();
}

void say_staging(const StageItem& item, const NodeContext& ctx, const Plan& plan, const std::string& shares)
{
    if (!shares.empty()) {
        sayf("staging %s (%s in %llu %s) from %s to %s %s", item.dataset.name.c_str(),
             format_size(plan.total_bytes()).c_str(), static_cast<unsigned long long>(plan.file_count()),
             plan.file_count() == 1 ? "file" : "files", item.dataset.source.c_str(), item.tier.name.c_str(),
             shares.c_str());
        return;
    }
    sayf("staging %s (%s in %llu %s) from %s to %s %s %d nodes", item.dataset.name.c_str(),
         format_size(plan.bytes_to_write()).c_str(), static_cast<unsigned long long>(plan.file_count()),
         plan.file_count() == 1 ? "file" : "files", item.dataset.source.c_str(), item.tier.name.c_str(),
         item.tier.shared() ? "(one shared copy) by" : "on", ctx.size);
}

}  // namespace dlstage::stager
