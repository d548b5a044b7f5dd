// What the epilog does with one staged dataset when its job ends, by the
// tier's cleanup key and the staging mode.  Mounts go whatever the tier
// keeps: a mount must not outlive its job, and removal never crosses into
// one.
#pragma once

#include <string>

#include "facts/config_model.hpp"

namespace dlstage::policy {

struct JobEndCleanup {
    bool detach_dataset_mount = false;  // detach the dataset's own mount point; the data stays
    bool remove_job_dir = false;        // detach every mount in the tier's job directory, then remove it
    std::string reason;                 // one line: why
};

JobEndCleanup cleanup_at_job_end(Cleanup cleanup, Mode mode);

}  // namespace dlstage::policy
