#include "stager/via_check.hpp"

#include <ctime>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "policies/purge.hpp"
#include "stager/kept_copy.hpp"

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

void check_via_copy(const StageItem& item, const NodeContext& ctx)
{
    if (!item.via)
        return;
    StageItem at_via = item;
    at_via.tier = *item.via;
    const DatasetLayout via = dataset_layout(at_via, ctx.values);
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

}  // namespace dlstage::stager
