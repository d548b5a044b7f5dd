// Which of Slurm's job states are final: gc removes what an ended job
// left, status says a job has ended.  A pure rule over the state word
// squeue prints.
#pragma once

#include <string_view>

namespace dlstage::policy {

// The state word says the job has ended (COMPLETED, FAILED, CANCELLED,
// TIMEOUT, ...: squeue -t all lists them for MinJobAge after their end).
// Any other word, one this version does not know included, is a job that
// still exists and can hold data on its nodes.
bool slurm_state_has_ended(std::string_view state);
inline bool slurm_state_is_live(std::string_view state)
{
    return !slurm_state_has_ended(state);
}

// A node state as sinfo prints it (%T: idle, mixed, allocated, drained,
// down*, ...) or scontrol does (IDLE+DRAIN, DOWN+NOT_RESPONDING) says the node may take a job now or once its jobs end:
// not down, drained or draining, failing, in maintenance, powered down or not responding ('*').  A job preferring nodes
// that cannot is held by Slurm 22.05 instead of running elsewhere (policies/node_features).
bool slurm_node_may_take_jobs(std::string_view state);

// A pending job's reason (squeue %r) says Slurm holds it for its
// constraints or preference: no node of its partition has the features
// (BadConstraints), or only nodes that cannot take jobs now do
// (ReqNodeNotAvail, ...).
bool slurm_reason_is_unmet_features(std::string_view reason);

}  // namespace dlstage::policy
