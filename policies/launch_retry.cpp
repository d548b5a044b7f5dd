#include "policies/launch_retry.hpp"

#include <algorithm>

#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
// What srun says of a task that died by a signal of its own making.
bool is_crash(const std::string& task_failure)
{
    for (const char* crash :
         {"Segmentation fault", "Aborted", "Bus error", "Illegal instruction", "Floating point exception"})
        if (ends_with(task_failure, crash) ||
            task_failure.find(std::string(crash) + " (core dumped)") != std::string::npos)
            return true;
    return false;
}
}  // namespace

Verdict retry_launch(const LaunchFailure& failure)
{
    if (failure.attempt >= kMostLaunches)
        return Verdict::refuse("the stager failed " + std::to_string(failure.attempt) + " times");
    if (failure.stager_spoke)
        return Verdict::refuse("the stager said why it failed");
    const auto crash = std::find_if(failure.task_failures.begin(), failure.task_failures.end(), is_crash);
    if (crash == failure.task_failures.end())
        return Verdict::refuse("the stager was not crashing while starting");
    return Verdict::allow("the stager crashed while starting (" + *crash +
                          ") before it staged anything; launching it once more");
}

}  // namespace dlstage::policy
