#include "lib/slurm_jobs.hpp"

#include <cstdio>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"

namespace dlstage {

const SlurmJob* SlurmJobs::find(const std::string& job_id) const
{
    const auto found = jobs.find(job_id);
    return found == jobs.end() ? nullptr : &found->second;
}

SlurmJobs parse_squeue(std::string_view text)
{
    SlurmJobs result;
    result.asked = true;
    for (const std::string& line : split(text, '\n')) {
        const std::vector<std::string> f = split(trim(line), '|');
        if (f.size() != 5 || f[0].empty())
            continue;
        const auto array_part = [](const std::string& v) { return v == "N/A" ? std::string() : v; };
        SlurmJob job{f[0], array_part(f[1]), array_part(f[2]), f[3], f[4]};
        // squeue shows an array job's own id as its first task's array id:
        // only a task id makes it an array task.
        if (job.array_task_id.empty())
            job.array_job_id.clear();
        result.jobs[job.job_id] = std::move(job);
    }
    return result;
}

SlurmJobs ask_slurm(double seconds)
{
    SlurmJobs none;
    const std::string squeue = find_on_path("squeue");
    const std::string timeout = find_on_path("timeout");
    if (squeue.empty() || timeout.empty()) {
        none.problem = squeue.empty() ? "squeue is not on PATH" : "timeout (coreutils) is not on PATH";
        return none;
    }
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.1f", seconds);
    try {
        std::string listing;  // all of it: run.output keeps only the tail of stderr
        const CapturedRun run =
            run_capturing({timeout, "-k", "1", limit, squeue, "-h", "-a", "-t", "all", "-o", kSqueueFormat},
                          [&](std::string_view more) { listing += more; });
        if (!exited_ok(run.status)) {
            none.problem = shell_exit_code(run.status) == 124 ? "squeue did not answer within " + std::string(limit) + " s"
                                                              : describe_failure("squeue", run.status, run.output);
            return none;
        }
        return parse_squeue(listing);
    } catch (const Error& e) {
        none.problem = e.what();
        return none;
    }
}

bool slurm_state_is_live(std::string_view state)
{
    for (const char* live : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STAGE_OUT", "RESIZING",
                             "SIGNALING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "STOPPED"})
        if (state == live)
            return true;
    return false;
}

}  // namespace dlstage
