#include "stager/copies/via_check.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/purge.hpp"
#include "stager/copies/copy_lock.hpp"
#include "stager/copies/copy_readers.hpp"
#include "stager/copies/kept_copy.hpp"
#include "stager/steps/collectives.hpp"

namespace dlstage::stager {
namespace {

bool differs(const KeptCopyCheck& found)
{
    return found.missing + found.wrong_size + found.added_total + found.foreign > 0;  // changed: in wrong_size too
}

std::string describe(const KeptCopyCheck& found)
{
    std::string text;
    const auto add = [&text](std::uint64_t n, const char* what) {
        if (n == 0)
            return;
        text += (text.empty() ? "" : ", ") + std::to_string(n) + (n == 1 ? " entry " : " entries ") + what;
    };
    add(found.changed, "written to");
    add(found.wrong_size - found.changed, "of another size");
    add(found.missing, "missing");
    add(found.added_total, "added");
    add(found.foreign, "not yours");
    return text;
}

// The next submission's mover job repairs the copy: its record says so
// (only what changed is then fetched); a copy without its list, or whose
// record cannot be rewritten, loses its record and is made again.
void mark_changed(const std::string& record_path, bool listed)
{
    try {
        std::optional<CopyRecord> record = listed ? read_copy_record(record_path) : std::nullopt;
        if (record) {
            record->found_changed = static_cast<std::int64_t>(std::time(nullptr));
            write_record(record_path, copy_record_table(*record));
            return;
        }
    } catch (const Error&) {
    }
    ::unlink(record_path.c_str());
}

}  // namespace

void check_via_copy(const StageItem& item, const NodeContext& ctx, const std::string& named)
{
    if (!item.via)
        return;
    StageItem at_via = item;
    at_via.tier = *item.via;
    DatasetLayout via = dataset_layout(at_via, ctx.values);
    if (!named.empty())
        via = with_copy_at(via, named);
    const std::optional<Plan> contents = read_contents_once(via.contents_file, ctx);
    KeptCopyCheck found;
    if (contents) {
        CheckShare share;
        share.purge_by = item.via->purge.by;
        share.compare_mtime = policy::mtimes_tell_writes(item.via_unpacked, *item.via);
        found = check_kept_copy(via.dataset_dir, *contents, share, ctx);
        if (!differs(found))
            return;
    }
    if (ctx.rank == 0)
        mark_changed(via.ready_marker, contents.has_value());
    throw Error(item.dataset.name + ": the copy in " + item.via->name + " its mover job made " +
                (contents ? "has changed since (" + describe(found) + ")" : "has lost its list of contents") +
                ": it is not used; submit the job again, and a mover job " +
                (contents ? "repairs it from its source" : "copies " + item.dataset.name + " again from its source"));
}

StageItem hold_via_copy(const StageItem& item, const NodeContext& ctx)
{
    if (!item.via)
        return item;
    StageItem at_via = item;
    at_via.tier = *item.via;
    const DatasetLayout via = dataset_layout(at_via, ctx.values);
    const DatasetLayout here = dataset_layout_within(at_via);
    Fd dir;
    std::unique_ptr<CopyLock> lock;
    std::string named, path;
    if (ctx.rank == 0) {
        dir = Fd(::open(via.tier_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!dir.valid())
            throw_cannot("open", via.tier_dir, errno);
        lock = take_copy_lock(item, ctx, dir.get(), here.lock_file, via.lock_file);
        try {
            if (const std::optional<CopyRecord> record = read_copy_record(via.ready_marker)) {
                named = copy_in_record(*record, via, here);
                path = record->ready.path;
            }
        } catch (const Error&) {
            // Unreadable: the check below finds the copy wanting.
        }
    }
    named = broadcast_text(ctx.comm, 0, named);
    path = broadcast_text(ctx.comm, 0, path);
    check_via_copy(item, ctx, named);
    if (ctx.rank == 0 && !named.empty())
        add_reader(dir.get(), via, here, ctx.values.job_id, {named, path});
    lock.reset();  // also released when the check throws
    StageItem held = item;
    if (!item.copy_only && !path.empty() && path != item.via_path && starts_with(item.dataset.source, item.via_path))
        held.dataset.source = path + item.dataset.source.substr(item.via_path.size());
    return held;
}

}  // namespace dlstage::stager
