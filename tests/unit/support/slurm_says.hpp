// What Slurm answered, for tests that decide over it: squeue's lines as
// ask_slurm asks for them (kSqueueFormat), parsed.
#pragma once

#include <string>

#include "job/slurm_jobs.hpp"

namespace dlstage::test {

inline SlurmJobs slurm_says(const std::string& squeue_lines)
{
    SlurmJobs slurm;
    slurm.jobs = parse_squeue(squeue_lines).value();
    slurm.asked = true;
    return slurm;
}

}  // namespace dlstage::test
