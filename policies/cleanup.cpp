#include "policies/cleanup.hpp"

namespace dlstage::policy {

JobEndCleanup cleanup_at_job_end(Cleanup cleanup, Mode mode)
{
    if (cleanup == Cleanup::JobEnd)
        return {false, true, "the tier's cleanup is \"job-end\": the job directory goes with the job"};
    // Kept past the job, maybe for the user's other jobs: only this job's
    // squashfs mount goes.
    const std::string kept = "the tier's cleanup is \"" + to_string(cleanup) + "\": the data stays";
    if (mode == Mode::Mount)
        return {true, false, kept + "; its squashfs mount goes with the job"};
    return {false, false, kept};
}

}  // namespace dlstage::policy
