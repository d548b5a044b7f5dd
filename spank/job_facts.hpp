// The job's id, user and node as the node-side contexts see them: the
// values path templates expand with.
#pragma once

#include <cstdint>
#include <string>

#include "lib/path_template.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

struct JobFacts {
    std::string job_id;
    std::string node;
    std::string user;
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    // An array task's ids (SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID in the
    // prolog's and epilog's environment), "" otherwise: recorded so that
    // `dlstage status -j 123_4` finds the task after Slurm forgot it.
    std::string array_job_id;
    std::string array_task_id;

    TemplateValues values() const { return {job_id, user, node}; }
};

// Job id, uid and gid from spank_get_item; node and user name from the
// environment (job_script: slurmd's; remote: the job's), the user name
// falling back to the password database.  Throws Error when missing.
JobFacts job_facts(SpankApi& api);

}  // namespace dlstage::spank
