#include "policies/slurm_states.hpp"

#include <cctype>
#include <string>

namespace dlstage::policy {

bool slurm_state_has_ended(std::string_view state)
{
    for (const std::string_view ended : {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                                         "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"})
        if (state == ended)
            return true;
    return false;
}

bool slurm_node_may_take_jobs(std::string_view shown)
{
    std::string state(shown);
    for (char& c : state)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (state.empty() || state.back() == '*' || state.back() == '~' || state.back() == '#' || state.back() == '!' ||
        state.back() == '%')
        return false;
    for (const std::string_view word : {"down", "drain", "fail", "maint", "power", "reboot", "unknown", "future",
                                        "inval", "no_respond", "not_respond"})
        if (state.find(word) != std::string::npos)
            return false;
    return true;
}

bool slurm_reason_is_unmet_features(std::string_view reason)
{
    return reason == "BadConstraints" || reason.rfind("ReqNodeNotAvail", 0) == 0;
}

}  // namespace dlstage::policy
