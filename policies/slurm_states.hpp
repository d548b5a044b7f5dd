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

}  // namespace dlstage::policy
