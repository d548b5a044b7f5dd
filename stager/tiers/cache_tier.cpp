#include "stager/tiers/cache_tier.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <functional>
#include <iterator>
#include <memory>
#include <mpi.h>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/job_identity.hpp"
#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/cache_reuse.hpp"
#include "policies/split_placement.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/copies/copy_lock.hpp"
#include "stager/copies/kept_copy.hpp"
#include "stager/plan/split_share.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/steps/stage_steps.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage::stager {

namespace {
using Clock = std::chrono::steady_clock;

// The user's cache directory on this node, as the prolog made it, open and
// checked once (every level root's, the directory the user's, 0700).
Fd open_cache_dir(const DatasetLayout& entry)
{
    OpenResult opened = open_job_dir(entry.tier_root, entry.tier_dir);
    if (!opened.problem.empty())
        throw Error(unprepared_dir("the node cache directory", entry.tier_dir, opened.problem,
                                   process_env(kRestartCountVar), "is the plugin loaded on this node?"));
    return std::move(opened.dir);
}

// Works in `into` for a while; back to `back` (the job directory) after.
class WorkIn {
public:
    WorkIn(const Fd& into, const Fd& back, const std::string& shown) : back_(back)
    {
        if (::fchdir(into.get()) != 0)
            throw_cannot("enter", shown, errno);
    }
    ~WorkIn()
    {
        if (::fchdir(back_.get()) != 0) {
            // Nothing better to do in a destructor: the next name looked
            // up relative to the working directory fails loudly.
        }
    }
    WorkIn(const WorkIn&) = delete;
    WorkIn& operator=(const WorkIn&) = delete;

private:
    const Fd& back_;
};

// The dataset's lock on every node of the job, or on none: a job that held
// one node's lock while waiting for another's could wait for ever on a job
// doing the same the other way round.  Whoever cannot have all lets go and
// tries again after a while that differs between jobs.
std::unique_ptr<CopyLock> lock_every_node(const StageItem& item, const NodeContext& ctx, const Fd& cache_dir,
                                          const DatasetLayout& here, const DatasetLayout& entry)
{
    auto last_said = std::make_shared<std::int64_t>(0);
    LockOptions options;
    // Each attempt is a new lock: the waiting line once a minute, not at each.
    options.say = [name = item.dataset.name, last_said](const std::string& line) {
        if (seconds_now() - *last_said < 60)
            return;
        *last_said = seconds_now();
        say(name + ": " + line);
    };
    std::minstd_rand jitter(static_cast<unsigned>(std::hash<std::string>{}(ctx.values.job_id)) +
                            static_cast<unsigned>(ctx.rank));
    for (;;) {
        std::unique_ptr<CopyLock> lock =
            CopyLock::try_take(cache_dir.get(), here.lock_file, entry.lock_file,
                               LockHolder{ctx.values.job_id, ctx.node, static_cast<long>(::getpid()), 0}, options);
        if (all_ranks(ctx.comm, lock != nullptr))
            return lock;
        lock.reset();
        std::this_thread::sleep_for(std::chrono::milliseconds(200 + jitter() % 1800));
    }
}

// Rank 0's identity of the plan, on every rank (one serialization of a
// million-entry plan, not one per node).
std::string shared_identity(const Plan& plan, const NodeContext& ctx)
{
    return broadcast_text(ctx.comm, 0, ctx.rank == 0 ? source_identity(plan) : std::string());
}

// What this node's cache holds of the dataset.
struct Look {
    bool hit = false;
    std::string why;  // a miss: why, for the job output
    std::optional<CopyRecord> record;
};

// Gathers the facts of this node's entry in the order the rule weighs them
// (policies/cache_reuse), stopping at the first that fails: a stat of
// every entry only when all before it hold.
Look look_here(const StageItem& item, const DatasetLayout& here, const Plan& plan, const std::string& identity)
{
    Look look;
    policy::CacheHitFacts facts;
    const auto decided = [&] {
        const policy::Verdict verdict = policy::cache_entry_usable(facts);
        look.hit = verdict.allowed;
        if (!verdict.allowed)
            look.why = verdict.reason;
        return look;
    };
    try {
        look.record = read_copy_record(here.ready_marker);
    } catch (const Error& e) {
        facts.record_problem = e.what();
        return decided();
    }
    facts.has_record = look.record.has_value();
    if (!facts.has_record)
        return decided();
    const CopyRecord& record = *look.record;
    facts.same_source = record.identity == identity && record.mode == to_string(item.dataset.mode);
    facts.sealed = record.sealed_ns > 0;
    if (!facts.same_source || !facts.sealed)
        return decided();
    // Copy mode: the same identity is the same plan, so the plan is what
    // the entry holds.  Extract mode: what extraction wrote, listed then.
    std::optional<Plan> listed;
    if (item.dataset.mode == Mode::Extract) {
        try {
            const std::optional<std::string> bytes = read_contents_file(here.contents_file);
            if (bytes)
                listed = deserialize(*bytes);
        } catch (const Error&) {
        }
    }
    facts.listed = item.dataset.mode != Mode::Extract || listed.has_value();
    if (!facts.listed)
        return decided();
    Fd copy(::open(here.dataset_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat top {};
    facts.present = copy.valid() && ::fstat(copy.get(), &top) == 0;
    facts.yours = facts.present && top.st_uid == ::geteuid();
    // Entries added to or removed from the top directory show in its ctime.
    facts.top_unchanged = facts.yours && ctime_ns(top) <= record.sealed_ns;
    if (!facts.top_unchanged)
        return decided();
    CheckShare share;
    share.sealed_ns = record.sealed_ns;
    const CopyCheck found = check_copy(copy.get(), listed ? *listed : plan, share);
    facts.missing = found.missing;
    facts.foreign = found.foreign;
    facts.changed = found.changed;
    facts.wrong_size = found.wrong_size;
    return decided();
}

// A split dataset's node (stager/plan/split_share): the plan is cut to this
// node's share, whose own identity its cache entry then has; a manifest's
// plan is checked file by file first (each node reads only its share, so
// no read can prove the rest).
struct SplitShare {
    NodeContext::SplitProgress whole;  // for rank 0's progress, which speaks for the job
    std::string index;                 // the JSON every node writes beside its marker
};
SplitShare split_share(const StageItem& item, const NodeContext& ctx, Plan& plan)
{
    if (manifest_unchecked(item, ctx, plan) && !plan_still_holds(item, ctx, plan)) {
        plan = plan_saying_progress(item, ctx, PlanFrom::Walk);
        check_mode_fits_plan(item, plan);
    }
    const SplitLayout layout = place_for(item, plan, static_cast<std::size_t>(ctx.size));
    const auto node = static_cast<std::size_t>(ctx.rank);
    SplitShare share;
    share.whole = {plan.total_bytes(), plan.file_count(), layout.share_bytes};
    share.index = split_index_json(item, plan, layout, node, texts_over_ranks(ctx.comm, ctx.node));
    if (ctx.rank == 0)
        say(item.dataset.name + ": " + shares_text(layout) + "; each node's cache holds its own share");
    plan = share_of(plan, layout, node);
    return share;
}

// The entry's seal: its directory's ctime once it is in place (the rename
// set it) and complete.
std::int64_t seal_of(const DatasetLayout& here, const DatasetLayout& entry)
{
    struct stat st {};
    if (::lstat(here.dataset_dir.c_str(), &st) != 0)
        throw_cannot("check", entry.dataset_dir, errno);
    return ctime_ns(st);
}

// The nodes that missed, together: read once among them, written on each,
// into .partial-NAME, then into place with its record.  unchecked: the plan
// came from a manifest that was not checked file by file (no node had the
// entry to reuse): the reads prove it, and a file found rewritten since
// the scan discards what was written; the plan (and its identity) is then
// a walk's, and the transfer starts again.
// Returns what this rank read of the source.  A split dataset's node
// stages its own share alone and quietly (part.quiet but on the job's rank
// 0): the job's summary comes after, over every node.
std::uint64_t stage_entry(const StageItem& item, const NodeContext& part, const ExchangeOptions& options,
                          const DatasetLayout& entry, const DatasetLayout& here, const Fd& cache_dir, Plan& plan,
                          std::string& identity, bool unchecked)
{
    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    clear_partial(entry, here, cache_dir);
    TransferResult moved;
    for (bool checked_by_reading = unchecked;; checked_by_reading = false) {
        const policy::ExtractionBudget budget = check_space(item, cache_dir, entry.tier_dir, plan);
        if (part.rank == 0 && !part.quiet)
            say_staging(item, part, plan, item.split ? "as this node's share of a split" : "");
        ProvingReads changes;
        moved = transfer(item, part, options, entry, here, cache_dir, plan, budget, false,
                         checked_by_reading ? &changes : nullptr);
        if (moved.drift.changed == 0)
            break;
        say_stale_manifest(item, part, moved.drift);
        clear_partial(entry, here, cache_dir);
        plan = plan_saying_progress(item, part, PlanFrom::Walk);
        check_mode_fits_plan(item, plan);
        identity = shared_identity(plan, part);
    }
    // As on any node tier: published only once every node that stages
    // holds a complete, verified copy.
    MPI_Barrier(part.comm);
    publish_copy(item, entry, here, cache_dir, part);
    std::optional<Plan> unpacked;
    if (item.dataset.mode == Mode::Extract) {
        unpacked = unpacked_contents(item, entry);
        write_contents(cache_dir.get(), entry.tier_dir, here.contents_file, *unpacked);
    }
    CopyRecord record = new_record(item, entry, plan, unpacked ? *unpacked : plan, identity, part);
    record.sealed_ns = seal_of(here, entry);
    record_use(record, here, part, record.made);
    moved.done();
    if (!item.split)
        say_transferred(item, part, plan.total_bytes(), moved.bytes_read, start, cpu_start);
    return moved.bytes_read;
}

// The job's marker on this node, in the job directory: DLSTAGE_<NAME> is
// the entry.
void mark_for_job(const StageItem& item, const DatasetLayout& entry, const Plan& plan, const CopyRecord& record,
                  const std::string& index)
{
    const DatasetLayout job_here = dataset_layout_within(item);
    ReadyMarker marker = record.ready;
    marker.index = index;
    const bool one_file = plan.single_file && item.dataset.mode != Mode::Extract;
    marker.path = one_file ? entry.dataset_dir + "/" + plan.entries.front().path : entry.dataset_dir;
    write_ready_marker(job_here.ready_marker, marker);
}

// Rank 0's line: its own entry's story when it hit.
std::string hit_line(const StageItem& item, const Look& mine, int hits, int nodes, double seconds)
{
    char line[512];
    if (!mine.hit) {
        std::snprintf(line, sizeof line, "%s: cache hit on %d of %d nodes; checked in %.2f s",
                      item.dataset.name.c_str(), hits, nodes, seconds);
        return line;
    }
    const CopyRecord& record = *mine.record;
    std::snprintf(line, sizeof line,
                  "%s: cache hit on %d of %d nodes (%s in %llu %s, cached by job %s on %s, "
                  "used %llu times on this node); checked in %.2f s",
                  item.dataset.name.c_str(), hits, nodes, format_size(record.ready.bytes).c_str(),
                  static_cast<unsigned long long>(record.ready.files), record.ready.files == 1 ? "file" : "files",
                  record.made_by.c_str(), day_text(record.made).c_str(), static_cast<unsigned long long>(record.uses),
                  seconds);
    return line;
}
}  // namespace

namespace {
// Rank 0 adds the nodes that hit to the job's progress record (once the
// transfer, if any, has written its own): `dlstage status` says where the
// job found its data.
void note_hit_nodes(const StageItem& item, const NodeContext& ctx, bool hit_here)
{
    const std::vector<std::string> nodes = texts_over_ranks(ctx.comm, hit_here ? ctx.node : std::string());
    if (ctx.rank != 0)
        return;
    std::vector<std::string> hit;
    std::copy_if(nodes.begin(), nodes.end(), std::back_inserter(hit), [](const std::string& n) { return !n.empty(); });
    std::string problem;
    if (!note_cache_hits(item, ctx, hit, problem))
        sayf("%s: no progress record: %s", item.dataset.name.c_str(), problem.c_str());
}

// A split dataset's shares are kept by their node's place in the job's node
// list (each prolog's use record): refused, before anything is written,
// unless the launcher put rank R on the job's node R.
void check_share_order(const StageItem& item, const NodeContext& ctx)
{
    const std::vector<std::string> node_of_rank = texts_over_ranks(ctx.comm, ctx.node);
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    const policy::Verdict order =
        policy::split_shares_in_node_order(node_of_rank, list ? expand_host_list(list) : std::nullopt);
    if (!order.allowed)
        throw Error(item.dataset.name + ": " + order.reason);
}
}  // namespace

void stage_cached(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                  const DatasetLayout& layout, const Fd& job_dir)
{
    if (item.split)
        check_share_order(item, ctx);
    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    const auto nodes = static_cast<std::size_t>(ctx.size), node = static_cast<std::size_t>(ctx.rank);
    const DatasetLayout entry = cache_layout(item, ctx.values.user, nodes, node);
    const DatasetLayout here = cache_layout_within(item, nodes, node);
    const Fd cache_dir = open_cache_dir(entry);
    std::unique_ptr<CopyLock> lock = lock_every_node(item, ctx, cache_dir, here, entry);
    MPI_Comm part = MPI_COMM_NULL;
    try {
        const WorkIn in_cache(cache_dir, job_dir, entry.tier_dir);
        Plan plan = plan_saying_progress(item, ctx);
        stage_phases().lap(Phase::Plan);
        check_mode_fits_plan(item, plan);
        std::optional<SplitShare> split;
        if (item.split)
            split = split_share(item, ctx, plan);
        std::string identity = split ? source_identity(plan) : shared_identity(plan, ctx);
        Look look = look_here(item, here, plan, identity);
        // A manifest's plan is checked file by file first when a node holds
        // an entry: reused on the plan's word, nothing of the source is read;
        // and one a walk made (the manifest stale since) is reused only
        // after that check finds the walk's plan.  With nothing cached the
        // reads prove the plan (stage_entry).
        bool unchecked = !split && manifest_unchecked(item, ctx, plan);
        if (unchecked && !all_ranks(ctx.comm, !look.record.has_value())) {
            unchecked = false;
            if (!plan_still_holds(item, ctx, plan)) {
                plan = plan_saying_progress(item, ctx, PlanFrom::Walk);
                check_mode_fits_plan(item, plan);
                identity = shared_identity(plan, ctx);
                look = look_here(item, here, plan, identity);
            }
            stage_phases().lap(Phase::Check);
        }
        const double check_s = std::chrono::duration<double>(Clock::now() - start).count();
        const int hits = static_cast<int>(reduce_over_ranks(ctx.comm, look.hit ? 1 : 0, MPI_SUM));
        if (!look.hit)
            sayf("%s: staging it on %s: %s", item.dataset.name.c_str(), ctx.node.c_str(), look.why.c_str());

        // Only the nodes that missed take part in the transfer; of a split
        // dataset, each alone: its share is its own.
        MPI_Comm_split(ctx.comm, look.hit ? 0 : 1 + (split ? ctx.rank : 0), ctx.rank, &part);
        std::uint64_t bytes_read = 0;
        if (!look.hit) {
            const NodeContext missed = part_of(ctx, part, split ? &split->whole : nullptr);
            bytes_read = stage_entry(item, missed, options, entry, here, cache_dir, plan, identity, unchecked);
            look.record = read_copy_record(here.ready_marker);
            if (!look.record)
                throw Error("the record of " + entry.dataset_dir + " vanished");
        } else {
            record_use(*look.record, here, ctx, look.record->oldest);
        }
        {
            const WorkIn in_job(job_dir, job_dir, layout.tier_dir);
            if (split)
                replace_file_at(job_dir.get(), layout.tier_dir, dataset_layout_within(item).split_index, split->index,
                                0644);
            mark_for_job(item, entry, plan, *look.record, split ? layout.split_index : std::string());
        }
        quiet_barrier(ctx.comm);  // every node's marker is written
        if (split && hits < ctx.size)
            say_transferred(item, ctx, split->whole.bytes, bytes_read, start, cpu_start);
        if (ctx.rank == 0 && hits > 0)
            say(hit_line(item, look, hits, ctx.size, check_s));
        if (ctx.rank == 0 && hits == ctx.size)
            record_job_state(item, *look.record, ctx, kCacheHitState);
        if (hits > 0)
            note_hit_nodes(item, ctx, look.hit);
    } catch (...) {
        if (part != MPI_COMM_NULL)
            MPI_Comm_free(&part);
        lock->release();  // else the user's next job here waits until it is judged stale
        throw;
    }
    MPI_Comm_free(&part);
    lock->release();
}

}  // namespace dlstage::stager
