#include "policies/slurm_states.hpp"

namespace dlstage::policy {

bool slurm_state_has_ended(std::string_view state)
{
    for (const std::string_view ended : {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                                         "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"})
        if (state == ended)
            return true;
    return false;
}

}  // namespace dlstage::policy
