#include "lib/slurm_jobs.hpp"

#include <ctime>
#include <sys/wait.h>

#include "lib/error.hpp"
#include "lib/job_records.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"

namespace dlstage {

namespace {
// What timeout(1) exits with when the time ran out.
constexpr int kTimedOut = 124;
}  // namespace

std::vector<std::string> squeue_command(int timeout_seconds)
{
    // %A: the job id of each job (an array's element its own); -a: hidden
    // partitions too; -t all: completing and pending jobs, and ended ones
    // Slurm still remembers (their state says they ended).
    return {"timeout", "--kill-after=5", std::to_string(timeout_seconds), "squeue", "--noheader", "--all",
            "--states=all", "--format=%A %T"};
}

std::optional<std::map<std::string, std::string>> parse_squeue(std::string_view text)
{
    std::map<std::string, std::string> states;
    for (const std::string& line : split(text, '\n')) {
        const std::string row = trim(line);
        if (row.empty())
            continue;
        const std::vector<std::string> fields = split(row, ' ');
        if (fields.size() != 2 || !is_job_id(fields[0]) || fields[1].empty())
            return std::nullopt;
        states[fields[0]] = fields[1];
    }
    return states;
}

SlurmJobs ask_slurm_jobs(int timeout_seconds)
{
    SlurmJobs jobs;
    jobs.asked_at = static_cast<std::int64_t>(std::time(nullptr));
    std::string answer;
    CapturedRun run;
    try {
        run = run_capturing(squeue_command(timeout_seconds), [&](std::string_view more) { answer += more; });
    } catch (const Error& e) {
        jobs.problem = e.what();
        return jobs;
    }
    if (WIFEXITED(run.status) && WEXITSTATUS(run.status) == kTimedOut) {
        jobs.problem = "squeue did not answer within " + std::to_string(timeout_seconds) + " s (slurmctld down?)";
        return jobs;
    }
    if (!exited_ok(run.status)) {
        jobs.problem = describe_failure("squeue", run.status, run.output);
        return jobs;
    }
    const auto states = parse_squeue(answer);
    if (!states) {
        jobs.problem = "squeue's answer is not lines of 'JOBID STATE' (it begins: " + first_line(answer) + ")";
        return jobs;
    }
    jobs.states = *states;
    return jobs;
}

}  // namespace dlstage
