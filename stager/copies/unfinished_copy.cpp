#include "stager/copies/unfinished_copy.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

#include "job/copy_record.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/write_all.hpp"
#include "policies/shared_copy.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/copies/kept_copy.hpp"
#include "stager/copies/piece_log.hpp"
#include "stager/steps/collectives.hpp"

namespace dlstage::stager {

namespace {
// Rank 0, for a record made while the source was walked: what the walk
// had found, entry by entry, against the plan now.  `walked`, per entry of
// the plan: the earlier attempt had it; `changed`: its file or symlink is
// fetched whatever the copy's stat says (changed since, or not in the list:
// its segment was not laid out yet when the attempt was cut off, and there
// is no entry of the source as it was read to compare).
struct WalkedAgainstPlan {
    bool listed = false;  // the list could be read
    std::uint64_t kind_changes = 0;
    std::vector<char> walked, changed;
};

WalkedAgainstPlan walked_against(const DatasetLayout& here, const Plan& plan)
{
    WalkedAgainstPlan found;
    std::optional<std::string> bytes;
    try {
        bytes = read_contents_file(here.walked_list);
    } catch (const Error&) {
        return found;  // not the user's, or unreadable: it says nothing
    }
    if (!bytes)
        return found;
    PlanChanges changes = changes_between(deserialize_segments(*bytes), plan);
    found.listed = true;
    found.kind_changes = changes.kind_changes;
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        if (!changes.known[i] && plan.entries.type(i) != EntryType::Dir)
            changes.changed[i] = 1;
    found.walked = std::move(changes.known);
    found.changed = std::move(changes.changed);
    return found;
}

// Rank 0: whether the policy lets this attempt go on from a partial copy.
bool may_go_on(const StageItem& item, const DatasetLayout& here, const Plan& plan, const std::string& identity,
               Unfinished& found, WalkedAgainstPlan& walked)
{
    policy::PartialFacts facts;
    struct stat st {};
    facts.partial = ::lstat(here.partial_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
    std::optional<ResumeRecord> record;
    if (facts.partial) {
        try {
            record = read_resume_record(here.resume_record);
        } catch (const Error&) {
            // Unreadable or not the user's: it says nothing of the partial copy.
        }
    }
    if (record && record->walked) {
        walked = walked_against(here, plan);
        if (!walked.listed)
            record.reset();
    }
    facts.has_record = record.has_value();
    if (record) {
        facts.same_source = record->identity == identity;
        facts.walked = record->walked;
        facts.kind_changes = walked.kind_changes;
        facts.same_mode = record->mode == to_string(item.dataset.mode);
        facts.began_by = record->began_by;
    }
    facts.refreshable = policy::copy_refreshable(item.dataset.mode, item.tier);
    const policy::Verdict verdict = policy::may_resume(facts);
    found.why = verdict.reason;
    if (verdict.allowed) {
        found.attempts = record->attempts + 1;
        found.began = record->began;
        found.began_by = record->began_by;
    }
    return verdict.allowed;
}

// The copy's directories writable by the user again, as the tree writer
// leaves them until its finish (its `continues` keeps them as they are).
// walked: only those the earlier attempt's walk had found must be there.
void make_dirs_writable(int copy, const Plan& plan, const std::vector<char>* walked, const std::string& shown)
{
    if (::fchmod(copy, 0700) != 0)
        throw_cannot("open again", shown, errno);
    for (std::size_t i = 0; i < plan.entries.size(); ++i) {
        if (plan.entries.type(i) != EntryType::Dir)
            continue;
        const std::string path(plan.entries.path(i));
        Fd dir(::openat(copy, path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!dir.valid() && errno == ENOENT && walked && !(*walked)[i])
            continue;
        if (!dir.valid() || ::fchmod(dir.get(), 0700) != 0)
            throw_cannot("open again", shown + "/" + path, errno);
    }
}

// Every rank, its share of the files cut off (`bad`): those whose logged
// pieces read back from their first byte are kept, cut to that length.
std::vector<HeldPrefix> keep_verified_prefixes(int copy, const DatasetLayout& here, const Plan& plan,
                                               const std::vector<std::size_t>& bad)
{
    std::unordered_set<std::string_view> paths;
    for (const std::size_t i : bad)
        if (plan.entries.file_size(i) > 0)
            paths.insert(plan.entries.path(i));
    if (paths.empty())
        return {};
    const PiecesByPath pieces =
        read_piece_logs(AT_FDCWD, here.pieces_dir, [&](std::string_view path) { return paths.count(path) > 0; });
    std::vector<HeldPrefix> held;
    for (const std::size_t i : bad) {
        const auto logged = plan.entries.file_size(i) > 0 ? pieces.find(std::string(plan.entries.path(i)))
                                                          : pieces.end();
        if (logged == pieces.end())
            continue;
        Fd file(
            ::openat(copy, std::string(plan.entries.path(i)).c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        struct stat st {};
        if (!file.valid() || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
            continue;
        const std::uint64_t bytes = verified_prefix(file.get(), plan.entries.record(i), logged->second);
        if (bytes > 0 && ::ftruncate(file.get(), static_cast<off_t>(bytes)) == 0)
            held.push_back({static_cast<std::uint32_t>(i), bytes});
    }
    return held;
}

// Every rank, its share: what was cut off or added goes, but for the
// prefixes of files the logs vouch for (`held`); the flags say which
// entries are still to write.  False (on every rank) when a
// directory is missing or not the user's: the skeleton comes before the
// first byte, so such a copy barely began (or someone else changed it),
// and its files cannot be trusted to sit where the plan puts them.  For a
// copy begun while its source was walked, `walked` (per entry) says which
// directories its skeletons held: those the walk had not reached are made
// now.
bool clear_what_was_cut_off(const DatasetLayout& layout, const DatasetLayout& here, const Plan& plan,
                            const KeptCopyCheck& checked, const std::vector<char>* walked, std::vector<char>& wanted,
                            std::vector<HeldPrefix>& held, const NodeContext& ctx)
{
    std::uint64_t bad_dirs = 0;
    for (const std::size_t i : checked.mine.bad)
        bad_dirs += plan.entries.type(i) == EntryType::Dir && (!walked || (*walked)[i]) ? 1 : 0;
    if (!all_ranks(ctx.comm, checked.present && bad_dirs == 0))
        return false;
    Fd copy(::open(here.partial_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    bool ok = copy.valid();
    try {
        if (ok && ctx.rank == 0)  // an attempt cut off in its finish left read-only directories
            make_dirs_writable(copy.get(), plan, walked, layout.partial_dir);
    } catch (const Error&) {
        ok = false;
    }
    if (!all_ranks(ctx.comm, ok))
        return false;  // clear_partial says what is wrong with it
    try {
        for (const std::string& name : checked.added)
            remove_copy_entry(copy.get(), name, layout.partial_dir);
        held = keep_verified_prefixes(copy.get(), here, plan, checked.mine.bad);
        auto kept = held.begin();
        for (const std::size_t i : checked.mine.bad) {  // both sorted by entry
            wanted[i] = 1;
            while (kept != held.end() && kept->entry < i)
                ++kept;
            if (kept == held.end() || kept->entry != i)
                remove_copy_entry(copy.get(), std::string(plan.entries.path(i)), layout.partial_dir);
        }
    } catch (const Error&) {
        ok = false;  // clear_partial says what cannot be removed
    }
    return all_ranks(ctx.comm, ok);
}

// Every rank's kept prefixes, sorted by entry, on every rank.
std::vector<HeldPrefix> held_over_ranks(const std::vector<HeldPrefix>& mine, const NodeContext& ctx)
{
    std::vector<std::uint64_t> flat;
    for (const HeldPrefix& prefix : mine) {
        flat.push_back(prefix.entry);
        flat.push_back(prefix.bytes);
    }
    const std::vector<std::uint64_t> all = values_over_ranks(ctx.comm, flat);
    std::vector<HeldPrefix> held;
    for (std::size_t k = 0; k + 1 < all.size(); k += 2)
        held.push_back({static_cast<std::uint32_t>(all[k]), all[k + 1]});
    std::sort(held.begin(), held.end(), [](const HeldPrefix& a, const HeldPrefix& b) { return a.entry < b.entry; });
    return held;
}
}  // namespace

Unfinished look_for_unfinished(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                               const Plan& plan, const std::string& identity, const NodeContext& ctx)
{
    Unfinished found;
    WalkedAgainstPlan walked;  // rank 0
    const bool go_on = all_ranks(ctx.comm, ctx.rank != 0 || may_go_on(item, here, plan, identity, found, walked));
    if (!go_on)
        return found;
    CheckShare share;
    share.purge_by = item.tier.purge.by;
    share.compare_mtime = true;  // may_resume: the copy keeps the source's mtimes
    const bool was_walked = !all_ranks(ctx.comm, ctx.rank != 0 || !walked.listed);
    if (was_walked) {
        for (std::vector<char>* flags : {&walked.walked, &walked.changed}) {
            flags->resize(plan.entries.size(), 0);  // the other ranks' are empty
            flags_over_ranks(ctx.comm, *flags);
        }
        share.known_changed = &walked.changed;
    }
    const KeptCopyCheck checked = check_kept_copy(here.partial_dir, plan, share, ctx);
    std::vector<char> wanted(plan.entries.size(), 0);
    std::vector<HeldPrefix> held;  // this rank's
    if (!clear_what_was_cut_off(layout, here, plan, checked, was_walked ? &walked.walked : nullptr, wanted, held,
                                ctx)) {
        found.why = "an unfinished copy lacks directories, or holds what cannot be removed: staging it whole";
        found.attempts = 1;
        found.began = 0;
        found.began_by.clear();
        return found;
    }
    flags_over_ranks(ctx.comm, wanted);
    found.resumed = true;
    found.attempts = reduce_over_ranks(ctx.comm, ctx.rank == 0 ? found.attempts : 0, MPI_MAX);
    found.rest = plan_part(plan, wanted, held_over_ranks(held, ctx));
    found.held = {plan.total_bytes() - found.rest.bytes_to_write(), plan.entries.size() - found.rest.file_count()};
    return found;
}

void record_unfinished(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                       const Unfinished& found, const std::string& identity, const NodeContext& ctx)
{
    ResumeRecord record;
    record.identity = identity;
    record.mode = to_string(item.dataset.mode);
    record.began = found.began != 0 ? found.began : seconds_now();
    record.began_by = found.began_by.empty() ? ctx.values.job_id : found.began_by;
    record.attempts = found.attempts;
    start_piece_logs(job_dir.get(), here.pieces_dir, layout.pieces_dir, found.resumed);
    write_record_at(job_dir.get(), layout.tier_dir, here.resume_record, resume_record_table(record), 0600);
}

void record_walking(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                    const NodeContext& ctx)
{
    replace_file_at(job_dir.get(), layout.tier_dir, here.walked_list, std::string(), 0600);
    start_piece_logs(job_dir.get(), here.pieces_dir, layout.pieces_dir, false);
    ResumeRecord record;
    record.walked = true;
    record.mode = to_string(item.dataset.mode);
    record.began = seconds_now();
    record.began_by = ctx.values.job_id;
    write_record_at(job_dir.get(), layout.tier_dir, here.resume_record, resume_record_table(record), 0600);
}

void note_walked(const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& segment)
{
    Fd list(::openat(job_dir.get(), here.walked_list.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
    if (!list.valid() || !write_all(list.get(), serialize(segment)))
        throw_cannot("write", layout.walked_list, errno);
    if (const int err = list.close())
        throw_cannot("write", layout.walked_list, err);
}

void forget_unfinished(const DatasetLayout& here, const Fd& job_dir)
{
    // Gone already: nothing to forget.
    ::unlinkat(job_dir.get(), here.resume_record.c_str(), 0);
    ::unlinkat(job_dir.get(), here.walked_list.c_str(), 0);
    forget_piece_logs(job_dir.get(), here.pieces_dir);
}

}  // namespace dlstage::stager
