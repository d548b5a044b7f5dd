#include "stager/via_check.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include "job/job_layout.hpp"
#include "lib/error.hpp"
#include "lib/sys/fd.hpp"
#include "policies/purge.hpp"
#include "stager/collectives.hpp"
#include "stager/copy_check.hpp"
#include "stager/kept_copy.hpp"

namespace dlstage::stager {
namespace {

struct Differences {
    std::uint64_t missing = 0, wrong = 0, changed = 0, added = 0, foreign = 0;
    bool any() const { return missing + wrong + added + foreign > 0; }
};

std::string describe(const Differences& d)
{
    std::string text;
    const auto add = [&text](std::uint64_t n, const char* what) {
        if (n == 0)
            return;
        text += (text.empty() ? "" : ", ") + std::to_string(n) + (n == 1 ? " entry " : " entries ") + what;
    };
    add(d.changed, "written to");
    add(d.wrong - d.changed, "of another size");
    add(d.missing, "missing");
    add(d.added, "added");
    add(d.foreign, "not yours");
    return text;
}

Differences compare(const Plan& contents, const StageItem& item, const DatasetLayout& via, const NodeContext& ctx)
{
    Differences mine;
    Fd copy(::open(via.dataset_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (copy.valid()) {
        CheckShare share;
        share.rank = ctx.rank;
        share.ranks = ctx.size;
        share.purge_by = item.via->purge.by;
        share.compare_mtime = item.via_unpacked || policy::keeps_source_mtimes(*item.via);
        const CopyCheck checked = check_copy(copy.get(), contents, share);
        mine.missing = checked.missing;
        mine.wrong = checked.wrong_size;  // changed ones counted in it too
        mine.changed = checked.changed;
        mine.foreign = checked.foreign;
        mine.added = find_added(copy.get(), contents, ctx.rank, ctx.size).size();
    } else if (ctx.rank == 0) {
        mine.missing = contents.entries.size();
    }
    Differences all;
    all.missing = reduce_over_ranks(ctx.comm, mine.missing, MPI_SUM);
    all.wrong = reduce_over_ranks(ctx.comm, mine.wrong, MPI_SUM);
    all.changed = reduce_over_ranks(ctx.comm, mine.changed, MPI_SUM);
    all.added = reduce_over_ranks(ctx.comm, mine.added, MPI_SUM);
    all.foreign = reduce_over_ranks(ctx.comm, mine.foreign, MPI_SUM);
    return all;
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
    Differences found;
    if (contents)
        found = compare(*contents, item, via, ctx);
    if (contents && !found.any())
        return;
    if (ctx.rank == 0)
        ::unlink(via.ready_marker.c_str());  // the next submission's mover job repairs it
    throw Error(item.dataset.name + ": the copy in " + item.via->name + " its mover job made " +
                (contents ? "has changed since (" + describe(found) + ")" : "has lost its list of contents") +
                ": it is not used; submit the job again, and a mover job copies " + item.dataset.name +
                " again from its source");
}

}  // namespace dlstage::stager
