#include "policies/cleanup.hpp"

namespace dlstage::policy {

JobEndCleanup cleanup_at_job_end(Cleanup cleanup, Mode mode)
{
    if (cleanup == Cleanup::JobEnd)
        return {false, true, "the tier's cleanup is \"job-end\": the job directory goes with the job"};
    // A node cache's copies live below <tier root>/.cache; the job directory
    // holds only the job's markers.
    if (cleanup == Cleanup::Cache)
        return {mode == Mode::Mount, true,
                "the tier's cleanup is \"cache\": the job directory goes, the cache keeps the dataset"};
    // Kept past the job, maybe for the user's other jobs: only this job's
    // squashfs mount goes.
    const std::string kept = "the tier's cleanup is \"" + to_string(cleanup) + "\": the data stays";
    if (mode == Mode::Mount)
        return {true, false, kept + "; its squashfs mount goes with the job"};
    return {false, false, kept};
}

}  // namespace dlstage::policy
