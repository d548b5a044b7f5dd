#include "spank/job_facts.hpp"

#include <pwd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"

namespace dlstage::spank {

JobFacts job_facts(SpankApi& api)
{
    JobFacts facts;
    const auto job_id = api.job_id();
    const auto uid = api.job_uid();
    if (!job_id || !uid)
        throw Error("slurm did not provide the job id or user id");
    facts.job_id = std::to_string(*job_id);
    facts.uid = *uid;
    facts.gid = api.job_gid().value_or(*uid);
    facts.node = api.getenv("SLURMD_NODENAME");
    facts.user = api.getenv("SLURM_JOB_USER");
    if (facts.user.empty()) {
        if (const passwd* pw = getpwuid(*uid))
            facts.user = pw->pw_name;
    }
    facts.array_job_id = api.getenv(kArrayJobIdVar);
    facts.array_task_id = api.getenv(kArrayTaskIdVar);
    if (facts.node.empty())
        throw Error("SLURMD_NODENAME is not set");
    return facts;
}

}  // namespace dlstage::spank
