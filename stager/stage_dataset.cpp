#include "stager/stage_dataset.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mpi.h>
#include <mutex>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "job/job_identity.hpp"
#include "job/job_layout.hpp"
#include "tier/safe_fs.hpp"
#include "lib/size.hpp"
#include "job/state_record.hpp"
#include "lib/strings.hpp"
#include "tier/tier_space.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/periodic.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/admission.hpp"
#include "policies/staging_mode.hpp"
#include "stager/extract.hpp"
#include "stager/parallel_extract.hpp"
#include "stager/own_chunks.hpp"
#include "stager/plan.hpp"
#include "stager/cache_tier.hpp"
#include "stager/shared_tier.hpp"
#include "stager/source_check.hpp"
#include "stager/stage_steps.hpp"

namespace dlstage::stager {

using Clock = std::chrono::steady_clock;

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

std::uint64_t reduce_over_ranks(MPI_Comm comm, std::uint64_t mine, MPI_Op op)
{
    unsigned long long in = mine, out = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, op, comm, &request);
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

bool exists(const std::string& path)
{
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
}

// The prolog made tier_dir for this user and told how that went in the
// user's state dir.  A failure it recorded (a full tier, no room on this
// node) is the reason the user should read, so it comes first.  Then the
// directory must be as the prolog leaves it: below levels only root can
// change, owned by this user.  It is opened once, here, and becomes the
// working directory: every name below it is looked up from the very
// directory checked, never through its path again.
Fd enter_job_dir(const DatasetLayout& layout, const NodeContext& ctx)
{
    if (const auto outcome = read_prolog_outcome(ctx.state_dir, ctx.values.job_id, ctx.node)) {
        if ((*outcome)["status"].value_or(std::string()) != kReadyState)
            throw Error((*outcome)["message"].value_or(std::string("the prolog could not prepare this node")));
    }
    OpenResult opened = open_job_dir(layout.tier_root, layout.tier_dir);
    if (!opened.problem.empty())
        throw Error(unprepared_dir("the job directory", layout.tier_dir, opened.problem,
                                   process_env(kRestartCountVar), "is PrologFlags=Alloc set and the plugin loaded?"));
    if (fchdir(opened.dir.get()) != 0)
        throw_cannot("enter", layout.tier_dir, errno);
    return std::move(opened.dir);
}

}  // namespace

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
    return exists(output.dir) && read_ready_marker(output.marker).has_value();
}

}  // namespace

Plan broadcast_plan(const StageItem& item, const NodeContext& ctx, PlanFrom from)
{
    // One MPI message holds at most INT_MAX bytes: big blocks go in steps.
    // The other ranks wait through rank 0's whole walk here: quietly.
    const auto bcast = [&ctx](void* data, std::size_t size) {
        constexpr std::size_t kStep = 1u << 30;
        for (std::size_t off = 0; off < size; off += kStep) {
            MPI_Request request = MPI_REQUEST_NULL;
            MPI_Ibcast(static_cast<char*>(data) + off, static_cast<int>(std::min(kStep, size - off)), MPI_BYTE, 0,
                       ctx.comm, &request);
            quiet_wait(request);
        }
    };
    // Rank 0 keeps the plan it made; the others receive its two blocks
    // straight into their own (stager/plan.hpp): no rank holds a second,
    // serialized copy of a million entries.
    Plan plan;
    std::string header;
    if (ctx.rank == 0) {
        std::string note;
        plan = from == PlanFrom::Walk ? build_plan(item.dataset) : plan_for(ctx.manifest_dir, item.dataset, note);
        if (!note.empty())
            say(note);
        else if (plan.from_manifest)
            sayf("%s: planned from its manifest (no walk of the source)", item.dataset.name.c_str());
        header = wire_header(plan);
    }
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

Plan usable_plan(const StageItem& item, const NodeContext& ctx, double* source_s)
{
    Plan plan = plan_saying_progress(item, ctx);
    const auto start = Clock::now();
    const bool holds = plan_still_holds(item, ctx, plan);
    if (source_s)
        *source_s = std::chrono::duration<double>(Clock::now() - start).count();
    return holds ? plan : plan_saying_progress(item, ctx, PlanFrom::Walk);
}

bool plan_still_holds(const StageItem& item, const NodeContext& ctx, const Plan& plan)
{
    const bool from_manifest = reduce_over_ranks(ctx.comm, ctx.rank == 0 && plan.from_manifest ? 1 : 0, MPI_MAX) != 0;
    if (!from_manifest || item.dataset.immutable)
        return true;
    const SourceDrift mine = check_source(plan, ctx.rank, ctx.size);
    const std::uint64_t changed = reduce_over_ranks(ctx.comm, mine.changed, MPI_SUM);
    if (changed == 0)
        return true;
    // The example rank 0 says: the lowest rank's that found one.
    const auto first = static_cast<int>(
        reduce_over_ranks(ctx.comm, mine.changed > 0 ? static_cast<std::uint64_t>(ctx.rank) : ~0ull, MPI_MIN));
    char example[1024] = {};
    if (ctx.rank == first)
        std::snprintf(example, sizeof example, "%s", mine.example.c_str());
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(example, sizeof example, MPI_CHAR, first, ctx.comm, &request);
    quiet_wait(request);
    if (ctx.rank == 0)
        sayf("manifest of %s is older than its source (%llu files changed in place since the scan, e.g. %s): "
             "planning from a walk; run 'dlstage catalog scan %s'",
             item.dataset.name.c_str(), static_cast<unsigned long long>(changed), example,
             item.dataset.name.c_str());
    return false;
}

void check_mode_fits_plan(const StageItem& item, const Plan& plan)
{
    policy::require(policy::mode_fits_source(item.dataset.mode, plan.format, plan.single_file, item.dataset.source));
}

// The tier's file system on this node, against what the plan brings.  The
// extracted size of archives is not known before extraction: their own size
// is the floor, and the budget returned bounds what extraction may write.
policy::ExtractionBudget check_space(const StageItem& item, const Fd& job_dir, const std::string& shown,
                                     const Plan& plan)
{
    const TierSpace space = measure_tier_space(job_dir.get(), shown);
    SourceFacts facts;
    facts.bytes = plan.total_bytes();
    facts.files = plan.entry_count();
    policy::require(policy::admit(item.dataset, item.tier, facts, space));
    return policy::extraction_budget(item.dataset, item.tier, facts, space);
}

namespace {
void make_fresh_dir(const std::string& path)
{
    if (mkdir(path.c_str(), 0755) != 0)
        throw_cannot("create", path, errno);
}

// Names the archive as the user knows it, not its node-local copy.
Error named_for_user(const Error& e, const DatasetLayout& layout, const Plan& plan)
{
    std::string message = e.what();
    const std::string local = layout.incoming_dir + "/";
    if (const std::size_t at = message.find(local); at != std::string::npos)
        message.replace(at, local.size(), plan.source_root + "/");
    return Error(message);
}

// Unpacks the archives that arrived into partial_dir; returns how many
// entries lost setuid/setgid/sticky bits on the way.  layout: relative to
// the job directory (the working directory).
std::uint64_t extract_into(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown, const Plan& plan,
                           unsigned threads, const policy::ExtractionBudget& limits)
{
    const auto remove = [&](const std::string& name) { return remove_tree_at(job_dir.get(), name, shown); };
    std::uint64_t stripped = 0;
    ExtractBudget budget(limits);
    if (plan.format == Format::Squashfs) {
        try {
            stripped +=
                extract_squashfs(layout.incoming_dir + "/" + plan.entries.front().path, layout.partial_dir, &budget)
                    .stripped;
        } catch (const Error& e) {
            throw named_for_user(e, layout, plan);
        }
    } else {
        make_fresh_dir(layout.partial_dir);
        std::vector<std::string> shards;
        for (const Entry& shard : plan.entries)
            shards.push_back(layout.incoming_dir + "/" + shard.path);
        try {
            stripped += extract_shards(shards, layout.partial_dir, threads, [&] {
                            const RemoveResult removed = remove(layout.partial_dir);
                            if (!removed.ok())
                                throw Error("cannot clear " + shown + "/" + layout.partial_dir + ": " +
                                            removed.problems.front());
                            make_fresh_dir(layout.partial_dir);
                        }, budget).stats.stripped;
        } catch (const Error& e) {
            remove(layout.partial_dir);  // at once: it may be as large as the tier allows
            throw named_for_user(e, layout, plan);
        }
    }
    const RemoveResult removed = remove(layout.incoming_dir);
    if (!removed.ok())
        throw Error("cannot remove " + shown + "/" + layout.incoming_dir + ": " + removed.problems.front());
    return stripped;
}

}  // namespace

bool write_progress(const StageItem& item, const NodeContext& ctx, const ProgressFigures& figures,
                    std::string& problem)
{
    toml::table record{{"dataset", item.dataset.name},
                       {"tier", item.tier.name},
                       {"state", figures.state},
                       {"nodes", ctx.size},
                       {"bytes_total", static_cast<std::int64_t>(figures.bytes_total)},
                       {"bytes_done", static_cast<std::int64_t>(figures.bytes_done)},
                       {"files_total", static_cast<std::int64_t>(figures.files_total)},
                       {"elapsed_s", figures.elapsed},
                       {"bytes_per_s", figures.elapsed > 0 ? static_cast<double>(figures.bytes_done) / figures.elapsed
                                                           : 0.0},
                       {"eta_s", figures.eta},
                       {"time", static_cast<std::int64_t>(std::time(nullptr))}};
    if (!figures.path.empty())
        record.insert("path", figures.path);
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

namespace {

// Rank 0, now and then: a line in the job output and the same figures in
// a progress record (state_dir/jobs/<job>/user/progress-<name>.toml) that
// `dlstage status` and admins can read while the job stages.
class Progress {
public:
    Progress(const StageItem& item, const Plan& plan, std::size_t chunks, const NodeContext& ctx)
        : item_(item), plan_(plan), total_(plan.total_bytes()), chunks_(chunks), ctx_(ctx), start_(Clock::now()),
          last_(start_)
    {
    }
    void operator()(std::size_t done_chunks, std::uint64_t done_bytes)
    {
        if (ctx_.rank != 0 || done_chunks == chunks_)
            return;
        const auto now = Clock::now();
        if (std::chrono::duration<double>(now - last_).count() < ctx_.progress_interval)
            return;
        last_ = now;
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        const double per_s = static_cast<double>(done_bytes) / elapsed;
        // Nothing written yet (the first opens of a small-file source take
        // a while): no rate, so no ETA and no "0%" to say.
        if (done_bytes == 0) {
            sayf("%s: starting: %s in %llu files to move, none written yet", item_.dataset.name.c_str(),
                 format_size(total_).c_str(), static_cast<unsigned long long>(plan_.file_count()));
            record(kStagingState, done_bytes, elapsed, 0);
            return;
        }
        const double eta = static_cast<double>(total_ - done_bytes) / per_s;
        sayf("%s: %s of %s (%.0f%%), %s, ETA %.0f s", item_.dataset.name.c_str(),
             format_size(done_bytes).c_str(), format_size(total_).c_str(),
             100.0 * static_cast<double>(done_bytes) / static_cast<double>(total_), format_rate(done_bytes, elapsed).c_str(),
             eta);
        record(kStagingState, done_bytes, elapsed, eta);
    }

    void done()
    {
        if (ctx_.rank == 0)
            record(kReadyState, total_, std::chrono::duration<double>(Clock::now() - start_).count(), 0);
    }

private:
    void record(const char* state, std::uint64_t done_bytes, double elapsed, double eta) const
    {
        std::string problem;
        if (!write_progress(item_, ctx_, {state, total_, done_bytes, plan_.file_count(), elapsed, eta, {}}, problem) &&
            !warned_) {
            sayf("%s: no progress record: %s", item_.dataset.name.c_str(), problem.c_str());
            warned_ = true;
        }
    }

    const StageItem& item_;
    const Plan& plan_;
    std::uint64_t total_;
    std::size_t chunks_;
    const NodeContext& ctx_;
    Clock::time_point start_, last_;
    mutable bool warned_ = false;
};

// Renames the verified copy into place and writes the marker, last.  An
// image to be mounted goes to image_dir, next to an empty mount point, and
// gets the staged marker: `dlstage hold-mounts` writes the ready marker
// once it is mounted.
// here: the names relative to the job directory, for the calls; layout: the
// paths, for messages and for what DLSTAGE_<NAME> will hold.
void publish(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Plan& plan)
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
    const bool one_file = plan.single_file && item.dataset.mode != Mode::Extract;
    marker.path = one_file ? into + "/" + plan.entries.front().path : into;
    marker.bytes = plan.total_bytes();
    marker.files = plan.file_count();
    write_ready_marker(output.marker, marker);
}

// Messages from below name what they touched relative to the job
// directory; say which one that is.
Error in_job_dir(const Error& e, const DatasetLayout& layout)
{
    const std::string message = e.what();
    if (message.find(layout.tier_dir) != std::string::npos || message.find(" .") == std::string::npos)
        return Error(message);
    return Error(message + " (in " + layout.tier_dir + ")");
}

}  // namespace

TransferResult transfer(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                        const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& plan,
                        const policy::ExtractionBudget& budget)
{
    const bool shared = item.tier.scope == Scope::Shared;
    const bool extract = item.dataset.mode == Mode::Extract;
    WriterOptions writer_options;
    writer_options.shared = shared;
    writer_options.keep_times = !(shared && item.tier.purge.days > 0 && item.tier.purge.by == PurgeBy::Mtime);
    if (item.tier.scope == Scope::Node && item.tier.cleanup == Cleanup::Cache)
        writer_options.file_mode_mask = 0555;
    TreeWriter writer(plan, extract ? here.incoming_dir : here.partial_dir, writer_options);
    if (!shared || ctx.rank == 0)
        writer.create_skeleton();
    if (shared)
        quiet_barrier(ctx.comm);
    const auto chunks = layout_chunks(plan, options.chunk_size);
    const auto progress = std::make_shared<Progress>(item, plan, chunks.size(), ctx);
    ExchangeResult exchanged;
    if (shared) {
        // Rank 0 sees its own share: about one in N of what all write.
        exchanged = copy_own_chunks(chunks, plan, writer, ctx.rank, ctx.size, options,
                                    [&](std::size_t done, std::uint64_t bytes) {
                                        (*progress)(std::min(chunks.size() - 1, done * static_cast<std::size_t>(ctx.size)),
                                                 std::min(plan.total_bytes(), bytes * static_cast<std::uint64_t>(ctx.size)));
                                    });
        quiet_barrier(ctx.comm);
        writer.finish_split_files();
        quiet_barrier(ctx.comm);
        if (ctx.rank == 0)
            writer.finish();
    } else {
        exchanged = exchange_chunks(plan, chunks, writer, options, std::ref(*progress), ctx.comm);
        writer.finish();
    }
    if (extract && (!shared || ctx.rank == 0)) {
        // A shared tier's archives are unpacked once, by rank 0: two ranks
        // unpacking into one tree could not tell whose later entry wins.
        const auto extract_start = Clock::now();
        const std::uint64_t stripped = extract_into(here, job_dir, layout.tier_dir, plan, options.writers, budget);
        const double seconds = std::chrono::duration<double>(Clock::now() - extract_start).count();
        if (ctx.rank == 0) {
            if (stripped > 0)
                sayf("%s: removed setuid/setgid/sticky bits from %llu entries",
                     item.dataset.name.c_str(), static_cast<unsigned long long>(stripped));
            sayf("%s: extracted %llu %s in %.2f s on %s (%u threads)",
                 item.dataset.name.c_str(), static_cast<unsigned long long>(plan.entries.size()),
                 plan.entries.size() == 1 ? "archive" : "archives", seconds, shared ? "one node" : "each node",
                 options.writers);
        }
    }
    return {exchanged.bytes_read, [progress] { progress->done(); }};
}

void say_transferred(const StageItem& item, const NodeContext& ctx, const Plan& plan, std::uint64_t bytes_read,
                     Clock::time_point start, std::uint64_t cpu_start)
{
    const std::uint64_t read = reduce_over_ranks(ctx.comm, bytes_read, MPI_SUM);
    const std::uint64_t peak_rss = reduce_over_ranks(ctx.comm, peak_rss_bytes(), MPI_MAX);
    const double cpu_seconds = static_cast<double>(reduce_over_ranks(ctx.comm, cpu_microseconds() - cpu_start, MPI_SUM)) / 1e6;
    if (ctx.rank != 0)
        return;
    const bool shared = item.tier.scope == Scope::Shared;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double ratio = plan.total_bytes() ? static_cast<double>(read) / static_cast<double>(plan.total_bytes()) : 1.0;
    sayf("staged %s to %s %s %d nodes in %.2f s (%s%s); source bytes read %s (%.2fx); "
         "peak memory per rank %s; cpu %.1f s over all nodes",
         item.dataset.name.c_str(), item.tier.name.c_str(), shared ? "(one shared copy) by" : "on", ctx.size, seconds,
         format_rate(plan.total_bytes(), seconds).c_str(), shared ? "" : " per node", format_size(read).c_str(), ratio,
         format_size(peak_rss).c_str(), cpu_seconds);
}

std::uint64_t cpu_now()
{
    return cpu_microseconds();
}

namespace {
// The rest of staging to a node tier, in the job directory (the working
// directory).
void stage_here(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                const DatasetLayout& layout, const Fd& job_dir)
{
    const DatasetLayout here = dataset_layout_within(item);
    if (all_ranks(ctx.comm, staged_here(item, here))) {
        if (ctx.rank == 0)
            sayf("%s is already staged to %s on %d nodes", item.dataset.name.c_str(),
                 item.tier.name.c_str(), ctx.size);
        return;
    }
    clear_leftovers(here, job_dir, layout.tier_dir);

    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_microseconds();
    const Plan plan = usable_plan(item, ctx);
    check_mode_fits_plan(item, plan);
    const policy::ExtractionBudget budget = check_space(item, job_dir, layout.tier_dir, plan);
    if (ctx.rank == 0)
        say_staging(item, ctx, plan);
    const TransferResult moved = transfer(item, ctx, options, layout, here, job_dir, plan, budget);

    // Publish only once every node holds a complete, verified copy: a rank
    // that failed has exited by now, and the launcher stops the others
    // (srun --kill-on-bad-exit), so no rank gets past this barrier.
    MPI_Barrier(ctx.comm);
    publish(item, layout, here, plan);
    moved.done();
    say_transferred(item, ctx, plan, moved.bytes_read, start, cpu_start);
}

}  // namespace

void say_staging(const StageItem& item, const NodeContext& ctx, const Plan& plan)
{
    sayf("staging %s (%s in %llu %s) from %s to %s %s %d nodes", item.dataset.name.c_str(),
         format_size(plan.total_bytes()).c_str(), static_cast<unsigned long long>(plan.file_count()),
         plan.file_count() == 1 ? "file" : "files", item.dataset.source.c_str(), item.tier.name.c_str(),
         item.tier.scope == Scope::Shared ? "(one shared copy) by" : "on", ctx.size);
}

void stage_dataset(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options)
{
    policy::require(policy::supported(item.dataset, item.tier));
    const DatasetLayout layout = dataset_layout(item, ctx.values);
    const Fd job_dir = enter_job_dir(layout, ctx);
    try {
        if (item.tier.scope == Scope::Shared)
            stage_shared(item, ctx, options, layout, job_dir);
        else if (item.tier.cleanup == Cleanup::Cache)
            stage_cached(item, ctx, options, layout, job_dir);
        else
            stage_here(item, ctx, options, layout, job_dir);
    } catch (const Error& e) {
        throw in_job_dir(e, layout);
    }
}

}  // namespace dlstage::stager
