// The job's id, user and node as the node-side contexts see them: the
// values path templates expand with.
#pragma once

#include <cstdint>
#include <string>

#include "facts/path_template.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

struct JobFacts {
    std::string job_id;
    std::string node;
    std::string user;
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    // An array task's ids where Slurm gives them to the prolog and epilog
    // (SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID; 22.05 with PrologFlags=Alloc
    // does not), "" otherwise; the stager records them from the job's
    // environment too.
    std::string array_job_id;
    std::string array_task_id;

    TemplateValues values() const { return {job_id, user, node}; }
};

// Job id, uid and gid from spank_get_item; node and user name from the
// environment (job_script: slurmd's; remote: the job's), the user name
// falling back to the password database.  Throws Error when missing.
JobFacts job_facts(SpankApi& api);

}  // namespace dlstage::spank
