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

std::vector<std::string> listpids_command(int timeout_seconds)
{
    return {"timeout", "--kill-after=5", std::to_string(timeout_seconds), "scontrol", "listpids"};
}

std::optional<std::set<std::string>> parse_listpids(std::string_view text)
{
    std::set<std::string> jobs;
    bool header = true;
    for (const std::string& line : split(text, '\n')) {
        std::vector<std::string> fields;
        for (const std::string& field : split(trim(line), ' '))
            if (!field.empty())
                fields.push_back(field);
        if (fields.empty())
            continue;
        if (header) {
            if (fields.size() < 2 || fields[1] != "JOBID")
                return std::nullopt;
            header = false;
            continue;
        }
        if (fields.size() < 2 || !is_job_id(fields[1]))
            return std::nullopt;
        jobs.insert(fields[1]);
    }
    return jobs;
}

namespace {
// Runs a bounded command: its stdout, or a problem.
std::optional<std::string> answer_of(const std::vector<std::string>& argv, const std::string& name, int timeout_seconds,
                                     std::string& problem, const char* quiet_failure = nullptr)
{
    std::string answer;
    CapturedRun run;
    try {
        run = run_capturing(argv, [&](std::string_view more) { answer += more; });
    } catch (const Error& e) {
        problem = e.what();
        return std::nullopt;
    }
    if (WIFEXITED(run.status) && WEXITSTATUS(run.status) == kTimedOut) {
        problem = name + " did not answer within " + std::to_string(timeout_seconds) + " s (slurmctld or slurmd down?)";
        return std::nullopt;
    }
    // scontrol listpids exits 1 when this node runs no job step.
    if (quiet_failure && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 1 &&
        (answer + run.output).find(quiet_failure) != std::string::npos)
        return std::string();
    if (!exited_ok(run.status)) {
        problem = describe_failure(name, run.status, run.output);
        return std::nullopt;
    }
    return answer;
}
}  // namespace

SlurmJobs ask_slurm_jobs(int timeout_seconds)
{
    SlurmJobs jobs;
    jobs.asked_at = static_cast<std::int64_t>(std::time(nullptr));
    const auto listed = answer_of(squeue_command(timeout_seconds), "squeue", timeout_seconds, jobs.problem);
    if (!listed)
        return jobs;
    const auto states = parse_squeue(*listed);
    if (!states) {
        jobs.problem = "squeue's answer is not lines of 'JOBID STATE' (it begins: " + first_line(*listed) + ")";
        return jobs;
    }
    jobs.states = *states;
    const auto local = answer_of(listpids_command(timeout_seconds), "scontrol listpids", timeout_seconds, jobs.problem,
                                 "No job steps exist on this node");
    if (!local)
        return jobs;
    const auto here = parse_listpids(*local);
    if (!here) {
        jobs.problem = "scontrol listpids' answer is not its table of PID JOBID ... (it begins: " + first_line(*local) + ")";
        return jobs;
    }
    jobs.here = *here;
    return jobs;
}

}  // namespace dlstage
