#include "stager/stage_dataset.hpp"

#include <cerrno>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/job_identity.hpp"
#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/split_placement.hpp"
#include "policies/staging_mode.hpp"
#include "stager/copies/kept_copy.hpp"
#include "stager/copies/via_check.hpp"
#include "stager/steps/phase_times.hpp"
#include "stager/tiers/stage_in_tier.hpp"
#include "stager/transfer/io_activity.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage::stager {

namespace {
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
        throw Error(unprepared_dir("the job directory", layout.tier_dir, opened.problem, process_env(kRestartCountVar),
                                   "is PrologFlags=Alloc set and the plugin loaded?"));
    if (fchdir(opened.dir.get()) != 0)
        throw_cannot("enter", layout.tier_dir, errno);
    return std::move(opened.dir);
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

void stage_dataset(const StageItem& planned, const NodeContext& ctx, const ExchangeOptions& options)
{
    policy::require(policy::supported(planned.dataset, planned.tier));
    if (planned.split)  // the catalog may have changed since submit
        policy::require(policy::split_possible(planned.dataset, planned.tier, planned.dataset.known_format()));
    // Two-hop: the mover's copy, as the mover left it, held for this job.
    const StageItem item = hold_via_copy(planned, ctx);
    if (item.copy_only) {  // the mover job's copy, whole: nothing to move here
        if (ctx.rank == 0) {
            say(item.dataset.name + ": using the copy in " + item.tier.name + " its mover job made");
            // For status: the job's row says reused, with the copy's size.
            if (const auto record = read_copy_record(dataset_layout(item, ctx.values).ready_marker))
                record_job_state(item, *record, ctx, kReusedState);
        }
        return;
    }
    stage_phases().start();
    stage_io().start();
    const DatasetLayout layout = dataset_layout(item, ctx.values);
    const Fd job_dir = enter_job_dir(layout, ctx);
    try {
        stage_in_tier(item, ctx, options, layout, job_dir);
    } catch (const Error& e) {
        throw in_job_dir(e, layout);
    }
}

}  // namespace dlstage::stager
