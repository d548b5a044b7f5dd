#include "stager/tiers/shared_tier.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/purge.hpp"
#include "policies/shared_copy.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/copies/copy_lock.hpp"
#include "stager/copies/copy_readers.hpp"
#include "stager/copies/kept_copy.hpp"
#include "stager/copies/piece_log.hpp"
#include "stager/copies/unfinished_copy.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/steps/segment_transfer.hpp"
#include "stager/steps/stage_steps.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace dlstage::stager {

namespace {
using Clock = std::chrono::steady_clock;

int broadcast_int(MPI_Comm comm, int value)
{
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(&value, 1, MPI_INT, 0, comm, &request);
    quiet_wait(request);
    return value;
}

// What every rank needs to know of the copy before deciding.
struct Found {
    std::optional<CopyRecord> record;  // rank 0 only
    std::string identity;              // rank 0 only
    bool has_record = false;           // every rank: there is a readable record
    bool same_source = false;          // every rank: ... of a copy of the source as it is now
    bool refreshable = false;          // every rank: ... or of an earlier state, checked against this one
    bool usable = false;               // every rank: ... and its contents file is whole
    std::optional<Plan> listed;        // the contents file as read (extract mode)
    HeldAlready held;                  // refreshable: what the copy holds, by its list
    PlanChanges changes;               // refreshable: what the source changed since, by the two plans

    // Every rank, when usable: what the copy holds (copy mode: the plan).
    const Plan& contents(const Plan& plan) const { return listed ? *listed : plan; }
};

Found look_for_copy(const StageItem& item, const DatasetLayout& here, const Plan& plan, const NodeContext& ctx)
{
    Found found;
    // 1: a record, 2: of this source, 3: ... and a contents file as long as
    // the plan's; 4: of an earlier state of the source, refreshable.
    int seen = 0;
    // In copy mode the contents file is the plan the copy was made from:
    // the same identity means the same bytes, so every rank has it already
    // (reading and parsing 1.28 M entries again cost seconds and a second
    // plan's memory per rank).  Its length is still checked.
    const bool copy_mode = item.dataset.mode != Mode::Extract;
    if (ctx.rank == 0) {
        const std::string bytes = serialize(plan);
        found.identity = source_identity_of(bytes);
        try {
            found.record = read_copy_record(here.ready_marker);
        } catch (const Error& e) {
            say(item.dataset.name + ": the copy's record is unreadable (" + e.what() + "): staging it again");
        }
        if (found.record) {
            const bool same_mode = found.record->mode == to_string(item.dataset.mode);
            seen = found.record->identity == found.identity && same_mode ? 2 : 1;
            if (seen == 1 && same_mode && policy::copy_refreshable(item.dataset.mode, item.tier))
                seen = 4;
        }
        if (seen == 2 && copy_mode) {
            struct stat st {};
            if (::lstat(here.contents_file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                static_cast<std::uint64_t>(st.st_size) == bytes.size())
                seen = 3;
        }
    }
    seen = broadcast_int(ctx.comm, seen);
    found.has_record = seen >= 1;
    found.same_source = seen == 2 || seen == 3;
    found.refreshable = seen == 4;
    if (!found.same_source && !found.refreshable)
        return found;
    if (found.refreshable) {
        // The copy against the plan now (its stat), and the plan it was made
        // from against the plan now (what its stat cannot tell: a rewrite in
        // the same second, a chmod, a symlink's new target, a new type).
        // The old plan goes once compared: a second plan per rank costs
        // memory for the whole repair.
        const std::optional<Plan> before = read_contents_once(here.contents_file, ctx);
        found.usable = before.has_value();
        if (before) {
            found.changes = changes_between(*before, plan);
            found.held = {before->total_bytes(), before->entries.size()};
        }
        return found;
    }
    if (copy_mode) {
        found.usable = seen == 3;
        return found;
    }
    found.listed = read_contents_once(here.contents_file, ctx);
    found.usable = found.listed.has_value();
    return found;
}

struct Checked {
    policy::CopyFacts facts;
    KeptCopyCheck copy;
};

Checked check_share(const StageItem& item, const DatasetLayout& here, const Found& found, const Plan& plan,
                    const NodeContext& ctx)
{
    Checked checked;
    checked.facts.has_record = found.has_record;
    checked.facts.same_source = found.same_source;
    checked.facts.refreshable = found.refreshable;
    checked.facts.kind_changes = found.changes.kind_changes;
    checked.facts.has_listing = found.usable;
    checked.facts.repairable = item.dataset.mode == Mode::Copy;
    if (!found.usable)
        return checked;
    CheckShare share;
    share.purge_by = item.tier.purge.by;
    share.refresh_atime = item.tier.purge.refresh_on_use;
    share.compare_mtime = policy::mtimes_tell_writes(item.dataset.mode == Mode::Extract, item.tier);
    if (found.refreshable)
        share.known_changed = &found.changes.changed;
    const Plan& contents = found.contents(plan);
    checked.copy = check_kept_copy(here.dataset_dir, contents, share, ctx);
    checked.facts.entries = contents.entries.size();
    checked.facts.missing = checked.copy.missing;
    checked.facts.wrong_size = checked.copy.wrong_size;
    checked.facts.added = checked.copy.added_total;
    checked.facts.foreign = checked.copy.foreign;
    // A copy gone (for any rank: it may go while they look) is fetched whole.
    checked.facts.repairable = all_ranks(ctx.comm, checked.facts.repairable && checked.copy.present);
    return checked;
}

// What was added goes first, each rank its share; then the directories
// that are missing, by rank 0 in plan order; then each rank its files.
void repair(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Plan& contents,
            const Checked& checked, const NodeContext& ctx)
{
    Fd copy(::open(here.dataset_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!copy.valid())
        throw_cannot("open", layout.dataset_dir, errno);
    for (const std::string& name : checked.copy.added)
        remove_copy_entry(copy.get(), name, layout.dataset_dir);
    std::vector<std::size_t> dirs;
    for (std::size_t i = 0; i < contents.entries.size(); ++i)
        if (contents.entries[i].type == EntryType::Dir) {
            struct stat st {};
            if (::fstatat(copy.get(), contents.entries[i].path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                dirs.push_back(i);
        }
    if (ctx.rank == 0)
        for (const std::size_t i : dirs)
            if (::mkdirat(copy.get(), contents.entries[i].path.c_str(), 0700 | (contents.entries[i].mode & 0777)) !=
                    0 &&
                errno != EEXIST)
                throw_cannot("create", layout.dataset_dir + "/" + contents.entries[i].path, errno);
    quiet_barrier(ctx.comm);
    const bool keep_times = policy::keeps_source_mtimes(item.tier);
    for (const std::size_t i : checked.copy.mine.bad) {
        const Entry& e = contents.entries[i];
        struct stat st {};
        if (e.type != EntryType::Dir && ::fstatat(copy.get(), e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode))
            remove_copy_entry(copy.get(), e.path, layout.dataset_dir);  // a directory where a file belongs
        if (e.type == EntryType::File) {
            fetch_again(contents, i, copy.get(), layout.dataset_dir, keep_times);
        } else if (e.type == EntryType::Symlink) {
            ::unlinkat(copy.get(), e.path.c_str(), 0);
            if (::symlinkat(e.target.c_str(), copy.get(), e.path.c_str()) != 0)
                throw_cannot("create symlink", layout.dataset_dir + "/" + e.path, errno);
        }
    }
    quiet_barrier(ctx.comm);
}

// A mark a job's nodes set on the record while this check ran (stager/
// via_check: they found the copy changed) stays: what they saw may be
// later than what this check saw.  The record is read again just before
// it is written; a mark set in between is still lost (a window of
// microseconds against the minutes a check may take).
std::int64_t mark_since(const DatasetLayout& here, std::int64_t since)
{
    try {
        const std::optional<CopyRecord> now = read_copy_record(here.ready_marker);
        if (now && now->found_changed >= since)
            return now->found_changed;
    } catch (const Error&) {
        // Unreadable now: record_use replaces it whole.
    }
    return 0;
}

// What a repair found and did, for the reuse line.
std::string repair_note(const policy::CopyFacts& facts)
{
    return "; found " + std::to_string(facts.missing) + " missing, " + std::to_string(facts.wrong_size) +
           " changed and " + std::to_string(facts.added) +
           " added entries: " + std::to_string(facts.missing + facts.wrong_size) + " fetched again, " +
           std::to_string(facts.added) + " removed";
}

// A copy brought up to the source's present state: its list and record
// now describe that state (the next job finds the same source), its life
// so far (made, uses, repairs) kept.
void refresh_record(CopyRecord& record, const StageItem& item, const Fd& job_dir, const DatasetLayout& layout,
                    const DatasetLayout& here, const Plan& plan, const std::string& identity, const NodeContext& ctx)
{
    write_contents(job_dir.get(), layout.tier_dir, here.contents_file, plan);
    const CopyRecord now = new_record(item, layout, plan, plan, identity, ctx);
    record.ready = now.ready;  // its path too: a single file may have another name now
    record.identity = now.identity;
    record.entries = now.entries;
}

std::string purge_note(const Tier& tier, std::int64_t oldest)
{
    const auto date = policy::purge_date(tier.purge, oldest);
    return date ? "; purged from " + day_text(*date) + " unless used" : "";
}

// What an unfinished copy holds already, for the job output.
std::string going_on_note(const Plan& plan, const Unfinished& unfinished)
{
    const std::uint64_t held = plan.file_count() - unfinished.rest.file_count();
    const std::vector<HeldPrefix>& prefixes = unfinished.rest.held_prefixes;
    const std::uint64_t cut_bytes = unfinished.rest.total_bytes() - unfinished.rest.bytes_to_write();
    std::string cut;
    if (!prefixes.empty())
        cut = ", and the first " + format_size(cut_bytes) + " of " + std::to_string(prefixes.size()) +
              (prefixes.size() == 1 ? " file" : " files") + " cut off mid-way";
    return "; " + std::to_string(held) + " of " + std::to_string(plan.file_count()) + " files (" +
           format_size(unfinished.held.bytes - cut_bytes) + ") are there whole" + cut + ", attempt " +
           std::to_string(unfinished.attempts);
}

// Every rank, once rank 0 made the pieces directory: this rank's log of
// what it writes of files written in several pieces, for an attempt after
// this one to go on from within a file (nothing where no attempt may go on).
std::unique_ptr<PieceLog> piece_log_for(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                                        const Fd& job_dir, std::uint64_t attempt, const NodeContext& ctx)
{
    if (!policy::copy_refreshable(item.dataset.mode, item.tier))
        return nullptr;
    return std::make_unique<PieceLog>(job_dir.get(), here.pieces_dir, layout.pieces_dir, attempt, ctx.rank);
}

PieceWritten noting_in(PieceLog* log)
{
    if (!log)
        return nullptr;
    return [log](const Plan& plan, std::size_t entry, std::uint64_t offset, const char* data, std::uint32_t length) {
        log->note(plan, entry, offset, data, length);
    };
}

// Rank 0, once the new copy is whole in .partial-NAME: it goes in place
// (beside the copy a running job reads, if one does), with its contents
// file and record.  Returns the name it was put in place as.  plan_bytes:
// the plan serialized already (its identity was made of them), written as
// the contents file when that is the plan (a million entries are some
// 100 MB to serialize again).
std::string publish_new_copy(const StageItem& item, const NodeContext& ctx, const DatasetLayout& layout,
                             const DatasetLayout& here, const Fd& job_dir, const Plan& plan,
                             const std::string& identity, const CopyReaders& readers,
                             const std::string* plan_bytes = nullptr)
{
    const std::string placed = place_for_new_copy(here, readers, ctx.values.job_id, seconds_now());
    const DatasetLayout at = with_copy_at(layout, placed);
    if (placed != here.dataset_dir)
        sayf("%s: %s is read in place by a running job: the new copy is made beside it, in %s",
             item.dataset.name.c_str(), layout.dataset_dir.c_str(), at.dataset_dir.c_str());
    publish_copy(item, at, with_copy_at(here, placed), job_dir, ctx);
    forget_unfinished(here, job_dir);
    std::optional<Plan> unpacked;
    if (item.dataset.mode == Mode::Extract)
        unpacked = unpacked_contents(item, at);
    const Plan& contents = unpacked ? *unpacked : plan;
    if (!unpacked && plan_bytes)
        write_contents(job_dir.get(), layout.tier_dir, here.contents_file, *plan_bytes);
    else
        write_contents(job_dir.get(), layout.tier_dir, here.contents_file, contents);
    CopyRecord record = new_record(item, at, plan, contents, identity, ctx);
    record_use(record, here, ctx, record.made);
    return placed;
}

// The first copy of a directory with no manifest (policy::
// walks_while_transferring): staged while rank 0 walks the source, each
// segment copied as soon as it is walked (on a parallel file system the
// walk of a large tree is minutes of stats before the first open).  Its
// identity and contents file come from the whole walk, at the end; until
// then its resume record has a walked list instead of an identity.
// Returns (rank 0) the name the copy was put in place as, and the plan.
std::string stage_walking(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                          const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                          const CopyReaders& readers, Plan& plan)
{
    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    const bool resumable = policy::copy_refreshable(item.dataset.mode, item.tier);
    if (ctx.rank == 0) {
        say(item.dataset.name + ": " + policy::decide_copy({}).reason);
        forget_unfinished(here, job_dir);  // a record with no partial copy left
        if (resumable)
            record_walking(item, layout, here, job_dir, ctx);
        sayf("staging %s from %s to %s (one shared copy) by %d nodes, walking it meanwhile", item.dataset.name.c_str(),
             item.dataset.source.c_str(), item.tier.name.c_str(), ctx.size);
        plan.format = Format::Dir;
        plan.source_root = item.dataset.source;
    }
    quiet_barrier(ctx.comm);
    const std::unique_ptr<PieceLog> log = piece_log_for(item, layout, here, job_dir, 1, ctx);
    WalkHooks hooks;
    hooks.piece_written = noting_in(log.get());
    hooks.segment_done = [&](const Plan& segment) {
        for (const Entry& e : segment.entries)
            plan.entries.add(e);
    };
    // Listed before its bytes are written: a file cut off is told by its
    // size and mtime (or its logged pieces), as in any partial copy, and a
    // whole one written by a rank before rank 0 could list it after the
    // fact is not fetched again.
    if (resumable)
        hooks.segment_laid_out = [&](const Plan& segment) { note_walked(layout, here, job_dir, segment); };
    // A source the walk refuses, or one too large for the tier, is bad
    // input, not a copy cut off: nothing of it stays (the next attempt
    // would find it refused again).
    hooks.walk_refused = [&] {
        forget_unfinished(here, job_dir);
        try {
            clear_partial(layout, here, job_dir);
        } catch (const Error& e) {
            say(item.dataset.name + ": " + e.what());  // the walk's error is the one to tell
        }
    };
    const WalkedTransfer moved = transfer_while_walking(item, ctx, options, layout, here, job_dir, hooks);
    quiet_barrier(ctx.comm);  // every rank's share is written
    std::string placed;
    if (ctx.rank == 0) {
        plan.entries.sort_by_path();                // as a whole walk's (the identity is of its bytes)
        const std::string bytes = serialize(plan);  // once: the identity's and the contents file's
        placed = publish_new_copy(item, ctx, layout, here, job_dir, plan, source_identity_of(bytes), readers, &bytes);
        moved.done();
    }
    quiet_barrier(ctx.comm);  // while rank 0 publishes and lists the copy
    say_transferred(item, ctx, moved.bytes, moved.bytes_read, start, cpu_start);
    return placed;
}

// Returns (rank 0) the name the copy was put in place as.  unchecked: the
// plan came from a manifest not checked file by file (there was no copy to
// reuse on its word): the reads prove it, and a file found rewritten since
// the scan discards what was written; the plan is then a walk's (so is
// `plan` on return) and the copy is staged from it.
std::string stage_copy(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                       const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, Plan& plan,
                       const std::string& identity, const std::string& why, const CopyReaders& readers, bool unchecked)
{
    std::string placed;
    const auto start = Clock::now();
    const std::uint64_t cpu_start = cpu_now();
    const Unfinished unfinished = look_for_unfinished(item, layout, here, plan, identity, ctx);
    if (ctx.rank == 0) {
        say(item.dataset.name + ": " + why);
        if (!unfinished.why.empty())
            say(item.dataset.name + ": " + unfinished.why +
                (unfinished.resumed ? going_on_note(plan, unfinished) : ""));
        if (!unfinished.resumed)
            clear_partial(layout, here, job_dir);
        if (policy::copy_refreshable(item.dataset.mode, item.tier))
            record_unfinished(item, layout, here, job_dir, unfinished, identity, ctx);
        else
            forget_unfinished(here, job_dir);  // never gone on from: one an earlier mode left goes
    }
    quiet_barrier(ctx.comm);
    const std::unique_ptr<PieceLog> log = piece_log_for(item, layout, here, job_dir, unfinished.attempts, ctx);
    const Plan& to_write = unfinished.resumed ? unfinished.rest : plan;
    const policy::ExtractionBudget budget = check_space(item, job_dir, layout.tier_dir, plan, {}, unfinished.held);
    if (ctx.rank == 0)
        say_staging(item, ctx, to_write);
    ProvingReads changes;
    // What is written from here on can hold zeros for a changed file, at
    // its planned size and mtime: a job cut off before the end must not
    // leave it to be gone on from.
    changes.on_first_change = [&job_dir, &here] { forget_unfinished(here, job_dir); };
    const TransferResult moved = transfer(item, ctx, options, layout, here, job_dir, to_write, budget,
                                          unfinished.resumed, unchecked ? &changes : nullptr, noting_in(log.get()));
    if (moved.drift.changed > 0) {
        say_stale_manifest(item, ctx, moved.drift);
        if (ctx.rank == 0) {
            clear_partial(layout, here, job_dir);
            forget_unfinished(here, job_dir);
        }
        quiet_barrier(ctx.comm);
        plan = plan_saying_progress(item, ctx, PlanFrom::Walk);
        check_mode_fits_plan(item, plan);
        const std::string walked = ctx.rank == 0 ? source_identity(plan) : std::string();
        return stage_copy(item, ctx, options, layout, here, job_dir, plan, walked, why, readers, false);
    }
    // Every rank's share is written and unpacked; where rank 0 unpacks alone
    // (overlapping shards, a squashfs image) the others wait without spinning
    // (at N = 4 on 2 cores, three ranks spinning in MPI_Barrier made rank 0's
    // extraction of the shards 3x slower).
    quiet_barrier(ctx.comm);
    if (ctx.rank == 0) {
        placed = publish_new_copy(item, ctx, layout, here, job_dir, plan, identity, readers);
        moved.done();
    }
    quiet_barrier(ctx.comm);  // while rank 0 publishes and lists the copy
    say_transferred(item, ctx, plan.total_bytes(), moved.bytes_read, start, cpu_start);
    return placed;
}
// Whether this job reads the copy in place once staged: every job but a
// mover job (two-hop staging), which only makes it.
bool reads_in_place(const StageItem& item, const NodeContext& ctx)
{
    const char* name = std::getenv(kJobNameVar);
    return !ctx.values.job_id.empty() &&
           !(name && std::string(name) == std::string(kMoverJobPrefix) + item.dataset.name);
}

// A repair that a running reader of the copy could see, made beside it:
// a new copy in .partial-NAME that links what is right in the copy and
// gets the rest from the source; then rank 0 puts it in place as
// `beside` (a name in the tier directory).
void repair_beside(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                   const DatasetLayout& at, const DatasetLayout& here_at, const Fd& job_dir, const Plan& contents,
                   const Checked& checked, const std::string& beside, const NodeContext& ctx)
{
    if (ctx.rank == 0) {
        clear_partial(layout, here, job_dir);
        forget_unfinished(here, job_dir);  // the partial copy is this one now
        if (::mkdirat(job_dir.get(), here.partial_dir.c_str(), 0700) != 0)
            throw_cannot("create", layout.partial_dir, errno);
        sayf("%s: %s is read in place by a running job: the new copy is made beside it, in %s/%s",
             item.dataset.name.c_str(), at.dataset_dir.c_str(), layout.tier_dir.c_str(), beside.c_str());
    }
    quiet_barrier(ctx.comm);
    link_copy(here_at.dataset_dir, here.partial_dir, layout.partial_dir, contents, checked.copy.mine.bad,
              policy::keeps_source_mtimes(item.tier), ctx);
    DatasetLayout into = layout, here_into = here;
    into.dataset_dir = layout.partial_dir;
    here_into.dataset_dir = here.partial_dir;
    repair(item, into, here_into, contents, checked, ctx);
    if (ctx.rank == 0) {
        set_dir_modes(here.partial_dir, contents, policy::keeps_source_mtimes(item.tier));
        publish_copy(item, with_copy_at(layout, beside), with_copy_at(here, beside), job_dir, ctx);
    }
    quiet_barrier(ctx.comm);
}

// Rank 0: whether the tier holds a copy's record or an unfinished copy of
// the dataset (else a first copy may be staged while walking).
bool copy_or_partial_there(const DatasetLayout& here)
{
    return name_exists(here.ready_marker) || name_exists(here.partial_dir);
}

// Rank 0, once the copy is current: this job's mark that it reads it in
// place, and earlier copies no job reads any more removed.
void note_use(const StageItem& item, const NodeContext& ctx, const DatasetLayout& layout, const DatasetLayout& here,
              const Fd& job_dir, const std::string& current, const Plan& plan, const CopyReaders& readers)
{
    if (ctx.rank != 0)
        return;
    if (reads_in_place(item, ctx))
        add_reader(job_dir.get(), layout, here, ctx.values.job_id,
                   {current, ready_path(item, with_copy_at(layout, current), plan)});
    sweep_old_copies(job_dir.get(), item, layout, here, current, readers);
}

void use_or_stage(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                  const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir)
{
    const auto start = Clock::now();
    const std::int64_t checked_from = seconds_now();
    const auto seconds_since = [](Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
    };
    double source_s = 0;
    if (all_ranks(ctx.comm, ctx.rank != 0 || walks_while_transferring(item, ctx, copy_or_partial_there(here)))) {
        CopyReaders readers;  // rank 0
        if (ctx.rank == 0)
            readers = look_at_readers(job_dir.get(), here, ctx.values.job_id, true);
        Plan walked;
        const std::string current = stage_walking(item, ctx, options, layout, here, job_dir, readers, walked);
        note_use(item, ctx, layout, here, job_dir, current, walked, readers);
        return;
    }
    Plan plan = plan_saying_progress(item, ctx);
    stage_phases().lap(Phase::Plan);
    check_mode_fits_plan(item, plan);
    double plan_s = seconds_since(start);
    auto look_start = Clock::now();
    Found found = look_for_copy(item, here, plan, ctx);
    // A manifest's plan is checked file by file first when there is a copy
    // (reused on the plan's word, nothing of the source read; or one a walk
    // made, the manifest stale since) or an unfinished one to go on from.
    // With neither, the reads prove the plan (stage_copy).
    bool unchecked = manifest_unchecked(item, ctx, plan);
    QuickStat partial;
    const bool has_partial = unchecked &&
                             !all_ranks(ctx.comm, ctx.rank != 0 || !quick_stat(AT_FDCWD, here.partial_dir.c_str(),
                                                                               AT_SYMLINK_NOFOLLOW, partial));
    if (unchecked && (found.has_record || has_partial)) {
        unchecked = false;
        const auto source_start = Clock::now();
        const bool holds = plan_still_holds(item, ctx, plan);
        source_s = seconds_since(source_start);
        stage_phases().lap(Phase::Check);
        if (!holds) {
            plan = plan_saying_progress(item, ctx, PlanFrom::Walk);
            stage_phases().lap(Phase::Plan);
            check_mode_fits_plan(item, plan);
            plan_s = seconds_since(start) - source_s;
            look_start = Clock::now();
            found = look_for_copy(item, here, plan, ctx);
        }
    }
    // The copy the record names: the dataset's own name, or one made beside it.
    const std::string named =
        broadcast_text(ctx.comm, 0,
                       ctx.rank == 0 && found.record ? copy_in_record(*found.record, layout, here) : here.dataset_dir);
    const DatasetLayout at = with_copy_at(layout, named), here_at = with_copy_at(here, named);
    const double look_s = seconds_since(look_start);
    const auto stat_start = Clock::now();
    const Checked checked = check_share(item, here_at, found, plan, ctx);
    const policy::CopyDecision decision = policy::decide_copy(checked.facts);
    const double stat_s = seconds_since(stat_start);
    const double check_s = seconds_since(start);
    // What a reader could see change: files fetched over others, entries
    // removed (added ones, someone else's, of another type), a new copy.
    const bool rewrites = decision.action == policy::CopyAction::Stage ||
                          (decision.action == policy::CopyAction::Repair &&
                           checked.facts.wrong_size + checked.facts.added + checked.facts.foreign > 0);
    CopyReaders readers;  // rank 0
    if (ctx.rank == 0)
        readers = look_at_readers(job_dir.get(), here, ctx.values.job_id,
                                  rewrites || other_copies_exist(job_dir.get(), here, named));

    std::string current = named;  // rank 0: the copy the record names once done
    if (decision.action == policy::CopyAction::Stage) {
        current = stage_copy(item, ctx, options, layout, here, job_dir, plan, found.identity, decision.reason, readers,
                             unchecked);
    } else {
        // A refresh may bring more than the copy holds: the tier's limits
        // and space as for a staging, what the copy holds counted as free.
        if (found.refreshable)
            check_space(item, job_dir, layout.tier_dir, plan, {}, found.held);
        const bool beside =
            all_ranks(ctx.comm,
                      ctx.rank != 0 || policy::change_beside({rewrites, readers.live_of(named), readers.known}));
        if (beside) {
            current = ctx.rank == 0 ? place_for_new_copy(here, readers, ctx.values.job_id, seconds_now()) : "";
            repair_beside(item, layout, here, at, here_at, job_dir, found.contents(plan), checked, current, ctx);
        } else if (decision.action == policy::CopyAction::Repair) {
            repair(item, at, here_at, found.contents(plan), checked, ctx);
        }
        if (ctx.rank == 0) {
            CopyRecord& record = *found.record;
            const DatasetLayout now_at = with_copy_at(layout, current);
            if (found.refreshable) {
                say(item.dataset.name + ": " + decision.reason);
                refresh_record(record, item, job_dir, now_at, here, plan, found.identity, ctx);
            }
            record.ready.path = ready_path(item, now_at, plan);
            const std::uint64_t fixed = checked.facts.missing + checked.facts.wrong_size;
            const std::uint64_t found_any = fixed + checked.facts.added;
            record.found_changed = mark_since(here, checked_from);  // else checked (and repaired) now
            record.repaired += fixed;
            record.checked_scan = plan.manifest_scanned;  // checked against this scan now
            // Files fetched again, or every file when the site refreshes
            // access times on use, count from now.
            const std::int64_t oldest = item.tier.purge.refresh_on_use ? seconds_now()
                                        : fixed > 0                    ? std::min(checked.copy.oldest, seconds_now())
                                                                       : checked.copy.oldest;
            record_use(record, here, ctx, oldest);
            record_job_state(item, record, ctx, kReusedState);
            sayf("%s: %s the copy in %s (%s in %llu files, made by job %s on %s, used %llu times); checked in "
                 "%.2f s (plan %.2f s, record and contents %.2f s, source %.2f s, stat %.2f s)%s%s",
                 item.dataset.name.c_str(), found_any ? "repaired and reused" : "reused", now_at.dataset_dir.c_str(),
                 format_size(record.ready.bytes).c_str(), static_cast<unsigned long long>(record.ready.files),
                 record.made_by.c_str(), day_text(record.made).c_str(), static_cast<unsigned long long>(record.uses),
                 check_s, plan_s, look_s, source_s, stat_s, found_any ? repair_note(checked.facts).c_str() : "",
                 purge_note(item.tier, record.oldest).c_str());
        }
    }
    note_use(item, ctx, layout, here, job_dir, current, plan, readers);
}
}  // namespace

void stage_shared(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                  const DatasetLayout& layout, const Fd& job_dir)
{
    const DatasetLayout here = dataset_layout_within(item);
    // Released when it goes, also when staging throws (else the next job
    // would wait until it is judged stale).
    const std::unique_ptr<CopyLock> lock =
        ctx.rank == 0 ? take_copy_lock(item, ctx, job_dir.get(), here.lock_file, layout.lock_file) : nullptr;
    quiet_barrier(ctx.comm);  // the others wait for the lock without spinning
    use_or_stage(item, ctx, options, layout, here, job_dir);
}

}  // namespace dlstage::stager
