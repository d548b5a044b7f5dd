#include "stager/copies/kept_copy.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <limits>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/stage_steps.hpp"

namespace dlstage::stager {

std::unique_ptr<CopyLock> take_copy_lock(const StageItem& item, const NodeContext& ctx, int dir_fd,
                                         const std::string& name, const std::string& shown)
{
    LockOptions options;
    options.say = [dataset = item.dataset.name](const std::string& line) { say(dataset + ": " + line); };
    return std::make_unique<CopyLock>(dir_fd, name, shown,
                                      LockHolder{ctx.values.job_id, ctx.node, static_cast<long>(::getpid()), 0},
                                      options);
}

std::int64_t seconds_now()
{
    return static_cast<std::int64_t>(std::time(nullptr));
}

// Rank 0: the new copy into place, the old one aside and away.
void publish_copy(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                  const NodeContext& ctx)
{
    struct stat st {};
    std::string retired;
    if (::lstat(here.dataset_dir.c_str(), &st) == 0) {
        retired = here.retired_dir + "-" + ctx.values.job_id;
        const RemoveResult cleared = remove_tree_at(job_dir.get(), retired, layout.tier_dir);
        if (!cleared.ok())
            throw Error("cannot clear " + layout.tier_dir + "/" + retired + ": " + cleared.problems.front());
        // Jobs still reading the old copy keep the files they have open.
        if (::rename(here.dataset_dir.c_str(), retired.c_str()) != 0)
            throw_cannot("move the old copy aside", layout.dataset_dir, errno);
    }
    if (::rename(here.partial_dir.c_str(), here.dataset_dir.c_str()) != 0)
        throw_cannot("rename", layout.partial_dir + " to " + layout.dataset_dir, errno);
    if (!retired.empty()) {
        const RemoveResult removed = remove_tree_at(job_dir.get(), retired, layout.tier_dir);
        if (!removed.ok())
            say(item.dataset.name + ": the replaced copy stays in " + layout.tier_dir + "/" + retired + ": " +
                removed.problems.front());
    }
}

// What an unpacked copy holds: what extraction wrote.  Any other copy
// holds the plan itself (not copied: at 1.28 M entries a plan is some
// 200 MB of rank 0's memory).
Plan unpacked_contents(const StageItem& item, const DatasetLayout& layout)
{
    Dataset unpacked;
    unpacked.name = item.dataset.name;
    unpacked.source = layout.dataset_dir;
    unpacked.format = Format::Dir;
    return build_plan(unpacked);
}

std::string ready_path(const StageItem& item, const DatasetLayout& layout, const Plan& plan)
{
    const bool one_file = plan.single_file && item.dataset.mode != Mode::Extract;
    return one_file ? layout.dataset_dir + "/" + plan.entries.front().path : layout.dataset_dir;
}

CopyRecord new_record(const StageItem& item, const DatasetLayout& layout, const Plan& plan, const Plan& contents,
                      const std::string& identity, const NodeContext& ctx)
{
    CopyRecord r;
    r.ready.dataset = item.dataset.name;
    r.ready.tier = item.tier.name;
    r.ready.source = item.dataset.source;
    r.ready.path = ready_path(item, layout, plan);
    r.ready.bytes = contents.total_bytes();
    r.ready.files = contents.file_count();
    r.identity = identity;
    r.mode = to_string(item.dataset.mode);
    r.entries = contents.entries.size();
    r.made = seconds_now();
    r.made_by = ctx.values.job_id;
    r.oldest = r.made;
    r.checked_scan = plan.manifest_scanned;
    return r;
}

void record_use(CopyRecord& record, const DatasetLayout& here, const NodeContext& ctx, std::int64_t oldest)
{
    record.uses += 1;
    record.last_use = seconds_now();
    record.last_job = ctx.values.job_id;
    if (oldest != std::numeric_limits<std::int64_t>::max())
        record.oldest = oldest;
    write_record(here.ready_marker, copy_record_table(record));
}

// The job's own record of what happened, for `dlstage status`.
void record_job_state(const StageItem& item, const CopyRecord& record, const NodeContext& ctx, const char* state)
{
    const std::uint64_t bytes = record.ready.bytes;
    std::string problem;
    if (!write_progress(item, ctx, {state, bytes, bytes, record.ready.files, 0, 0, record.ready.path, {}}, problem))
        sayf("%s: no progress record: %s", item.dataset.name.c_str(), problem.c_str());
}

// What a failed or interrupted staging left; the copy itself stays until
// the new one replaces it.
void clear_partial(const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir)
{
    for (const std::string* name : {&here.partial_dir, &here.incoming_dir}) {
        const RemoveResult removed = remove_tree_at(job_dir.get(), *name, layout.tier_dir);
        if (!removed.ok())
            throw Error("cannot clear " + layout.tier_dir + "/" + *name + ": " + removed.problems.front());
    }
}

KeptCopyCheck check_kept_copy(const std::string& dir, const Plan& contents, CheckShare share, const NodeContext& ctx)
{
    share.rank = ctx.rank;
    share.ranks = ctx.size;
    KeptCopyCheck checked;
    Fd copy(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    checked.present = copy.valid();
    if (checked.present) {
        checked.mine = check_copy(copy.get(), contents, share);
        checked.added = find_added(copy.get(), contents, ctx.rank, ctx.size);
    } else {  // the whole copy is gone: every entry of this share is missing
        checked.mine.missing = (contents.entries.size() + static_cast<std::size_t>(ctx.size - 1 - ctx.rank)) /
                               static_cast<std::size_t>(ctx.size);
    }
    // The copy's directory counts too: someone else's holds what they like.
    struct stat top {};
    const bool foreign_top = checked.present && ctx.rank == 0 && ::fstat(copy.get(), &top) == 0 &&
                             top.st_uid != share.owner;
    checked.missing = reduce_over_ranks(ctx.comm, checked.mine.missing, MPI_SUM);
    checked.wrong_size = reduce_over_ranks(ctx.comm, checked.mine.wrong_size, MPI_SUM);
    checked.changed = reduce_over_ranks(ctx.comm, checked.mine.changed, MPI_SUM);
    checked.added_total = reduce_over_ranks(ctx.comm, checked.added.size(), MPI_SUM);
    checked.foreign = reduce_over_ranks(ctx.comm, checked.mine.foreign + (foreign_top ? 1 : 0), MPI_SUM);
    checked.oldest = reduce_min(ctx.comm, checked.mine.oldest);
    return checked;
}

void remove_copy_entry(int copy, const std::string& name, const std::string& shown)
{
    struct stat st {};
    if (::fstatat(copy, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(copy, name.c_str(), 0) != 0 && errno != ENOENT)
            throw_cannot("remove", shown + "/" + name, errno);
        return;
    }
    const RemoveResult removed = remove_tree_at(copy, name, shown);
    if (!removed.ok())
        throw Error("cannot remove " + shown + "/" + name + ": " + removed.problems.front());
}

void link_copy(const std::string& from_dir, const std::string& to_dir, const std::string& shown, const Plan& contents,
               const std::vector<std::size_t>& skip, bool keep_times, const NodeContext& ctx)
{
    Fd from(::open(from_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    Fd to(::open(to_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!from.valid() || !to.valid())
        throw_cannot("open", from.valid() ? shown : from_dir, errno);
    const EntryList& entries = contents.entries;
    bool ok = true;
    if (ctx.rank == 0)
        for (std::size_t i = 0; i < entries.size() && ok; ++i)
            if (entries.type(i) == EntryType::Dir)
                ok = ::mkdirat(to.get(), std::string(entries.path(i)).c_str(), 0700) == 0 || errno == EEXIST;
    if (!all_ranks(ctx.comm, ok))
        throw Error("cannot create the directories of " + shown);
    const std::size_t step = static_cast<std::size_t>(ctx.size);
    std::size_t next_skip = 0;
    for (std::size_t i = static_cast<std::size_t>(ctx.rank); i < entries.size(); i += step) {
        while (next_skip < skip.size() && skip[next_skip] < i)
            ++next_skip;
        if (entries.type(i) == EntryType::Dir || (next_skip < skip.size() && skip[next_skip] == i))
            continue;
        const std::string path(entries.path(i));
        const bool made = entries.type(i) == EntryType::File
                              ? ::linkat(from.get(), path.c_str(), to.get(), path.c_str(), 0) == 0
                              : ::symlinkat(std::string(entries.target(i)).c_str(), to.get(), path.c_str()) == 0;
        if (!made && errno == ENOENT && entries.type(i) == EntryType::File)
            fetch_again(contents, i, to.get(), shown, keep_times);  // purged since the check
        else if (!made)
            throw_cannot("link", shown + "/" + path, errno);
    }
    quiet_barrier(ctx.comm);
}

// Rank 0 alone reads it: N ranks reading a file of some 100 MB (1.28 M
// entries) from the shared file system would read it N times.
std::optional<Plan> read_contents_once(const std::string& path, const NodeContext& ctx)
{
    std::string bytes;
    unsigned long long size = 0;
    if (ctx.rank == 0) {
        try {
            if (std::optional<std::string> file = read_contents_file(path)) {
                bytes = std::move(*file);
                size = bytes.size() + 1;  // 0: none
            }
        } catch (const Error&) {
            size = 0;  // unreadable: staged again, as when there is none
        }
    }
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, ctx.comm, &request);
    quiet_wait(request);
    if (size == 0)
        return std::nullopt;
    bytes.resize(size - 1);
    constexpr std::size_t kStep = 1u << 30;  // one MPI message holds at most INT_MAX bytes
    for (std::size_t off = 0; off < bytes.size(); off += kStep) {
        MPI_Ibcast(bytes.data() + off, static_cast<int>(std::min<std::size_t>(kStep, bytes.size() - off)), MPI_BYTE, 0,
                   ctx.comm, &request);
        quiet_wait(request);
    }
    int parsed = 1;
    std::optional<Plan> contents;
    try {
        contents = deserialize(bytes);
    } catch (const Error&) {
        parsed = 0;
    }
    return all_ranks(ctx.comm, parsed != 0) ? std::move(contents) : std::nullopt;
}

}  // namespace dlstage::stager
