#include "job/slurm_jobs.hpp"

#include <algorithm>
#include <ctime>
#include <sys/wait.h>

#include "job/job_records.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"

namespace dlstage {

namespace {
// What timeout(1) exits with when the time ran out.
constexpr int kTimedOut = 124;
}  // namespace

const SlurmJob* SlurmJobs::find(const std::string& job_id) const
{
    const auto found = jobs.find(job_id);
    return found == jobs.end() ? nullptr : &found->second;
}

std::vector<std::string> bounded_command(std::vector<std::string> argv, int seconds)
{
    argv.insert(argv.begin(), {"timeout", "--kill-after=5", std::to_string(seconds)});
    return argv;
}

std::vector<std::string> squeue_command(int timeout_seconds)
{
    return bounded_command({"squeue", "--noheader", "--all", "--states=all", std::string("--format=") + kSqueueFormat},
                           timeout_seconds);
}

std::optional<std::map<std::string, SlurmJob>> parse_squeue(std::string_view text)
{
    std::map<std::string, SlurmJob> jobs;
    for (const std::string& line : split(text, '\n')) {
        const std::string row = trim(line);
        if (row.empty())
            continue;
        const std::vector<std::string> f = split(row, '|');
        if (f.size() != 5 || !is_job_id(f[0]) || f[3].empty())
            return std::nullopt;
        const auto array_part = [](const std::string& v) { return v == "N/A" ? std::string() : v; };
        SlurmJob job{f[0], array_part(f[1]), array_part(f[2]), f[3], f[4]};
        // squeue shows an array job's own id as its first task's array id:
        // only a task id makes it an array task.
        if (job.array_task_id.empty())
            job.array_job_id.clear();
        jobs[job.job_id] = std::move(job);
    }
    return jobs;
}

std::vector<std::string> listpids_command(int timeout_seconds)
{
    return bounded_command({"scontrol", "listpids"}, timeout_seconds);
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
// Every non-empty line of text is line (and there is one).
bool only_lines(const std::string& text, const char* line)
{
    bool any = false;
    for (const std::string& l : split(text, '\n')) {
        const std::string t = trim(l);
        if (t.empty())
            continue;
        if (t != line)
            return false;
        any = true;
    }
    return any;
}
}  // namespace

std::optional<std::string> slurm_answer(const std::vector<std::string>& argv, const std::string& name,
                                        int timeout_seconds, std::string& problem, const char* quiet_failure,
                                        const std::vector<std::string>* env, const char* harmless_line)
{
    std::string answer;  // all of it: run.output keeps only the tail of stderr
    CapturedRun run;
    try {
        run = run_capturing(
            argv, [&](std::string_view more) { answer += more; }, env);
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
    if (harmless_line && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 1 && only_lines(run.output, harmless_line))
        return answer;
    if (!exited_ok(run.status)) {
        problem = describe_failure(name, run.status, run.output);
        return std::nullopt;
    }
    return answer;
}

SlurmJobs ask_slurm(int timeout_seconds, bool with_local_pids)
{
    SlurmJobs slurm;
    slurm.asked_at = static_cast<std::int64_t>(std::time(nullptr));
    const auto listed = slurm_answer(squeue_command(timeout_seconds), "squeue", timeout_seconds, slurm.problem);
    if (!listed)
        return slurm;
    auto jobs = parse_squeue(*listed);
    if (!jobs) {
        slurm.problem = "squeue's answer is not lines of '" + std::string(kSqueueFormat) +
                        "' (it begins: " + first_line(*listed) + ")";
        return slurm;
    }
    slurm.jobs = std::move(*jobs);
    if (with_local_pids) {
        const auto local = slurm_answer(listpids_command(timeout_seconds), "scontrol listpids", timeout_seconds,
                                        slurm.problem, "No job steps exist on this node", nullptr, kStaleStepSocket);
        if (!local)
            return slurm;
        const auto here = parse_listpids(*local);
        if (!here) {
            slurm.problem =
                "scontrol listpids' answer is not its table of PID JOBID ... (it begins: " + first_line(*local) + ")";
            return slurm;
        }
        slurm.here = *here;
    }
    slurm.asked = true;
    return slurm;
}

std::optional<std::int64_t> parse_slurm_duration(std::string_view text)
{
    const bool negative = !text.empty() && text.front() == '-';
    if (negative)
        text.remove_prefix(1);
    std::int64_t days = 0;
    if (const auto dash = text.find('-'); dash != std::string_view::npos) {
        if (dash == 0 || dash > 5 || text.find_first_not_of("0123456789") != dash)
            return std::nullopt;
        days = static_cast<std::int64_t>(parse_count(text.substr(0, dash), 0, 99999));
        text.remove_prefix(dash + 1);
    }
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() < 2 || parts.size() > 3 || (days > 0 && parts.size() != 3))
        return std::nullopt;
    std::int64_t seconds = 0;
    for (const std::string& part : parts) {
        if (part.empty() || part.size() > 6 || part.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        seconds = seconds * 60 + static_cast<std::int64_t>(parse_count(part, 0, 999999));
    }
    seconds += days * 86400;
    return negative ? -seconds : seconds;
}

std::optional<std::int64_t> parse_slurm_time(std::string_view text)
{
    const std::string copy(text);
    std::tm t{};
    const char* end = ::strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &t);
    if (!end || *end != '\0')
        return std::nullopt;
    t.tm_isdst = -1;  // as the local zone has it on that day
    const std::time_t at = std::mktime(&t);
    if (at == static_cast<std::time_t>(-1))
        return std::nullopt;
    return static_cast<std::int64_t>(at);
}

std::map<std::string, JobState> parse_job_states(std::string_view squeue)
{
    std::map<std::string, JobState> states;
    for (const std::string& line : split(squeue, '\n')) {
        const std::vector<std::string> f = split(trim(line), '|');
        if (f.size() >= 3 && is_job_id(f[0]))
            states[f[0]] = {f[1], f[2]};
    }
    return states;
}

std::optional<std::map<std::string, JobState>> ask_job_states(const std::vector<std::string>& ids, int timeout_seconds,
                                                              std::string& problem, const std::vector<std::string>* env)
{
    if (ids.empty())
        return std::map<std::string, JobState>{};
    // squeue refuses (status 1) a list of jobs it has all forgotten.
    const auto answer = slurm_answer(bounded_command({"squeue", "--noheader", "--states=all",
                                                      "--jobs=" + join(ids, ","), "--format=%A|%T|%r"},
                                                     timeout_seconds),
                                     "squeue", timeout_seconds, problem, "Invalid job id", env);
    if (!answer)
        return std::nullopt;
    return parse_job_states(*answer);
}

std::optional<JobClock> job_clock_in(std::string_view squeue, std::int64_t now)
{
    const std::vector<std::string> f = split(trim(std::string(squeue)), '|');
    if (f.size() != 4)
        return std::nullopt;
    const auto limit = parse_slurm_duration(f[0]);
    if (!limit)
        return std::nullopt;
    auto left = parse_slurm_duration(f[1]);
    if (const auto end = parse_slurm_time(f[2]))
        left = left ? std::min(*left, *end - now) : *end - now;
    if (!left)
        return std::nullopt;
    return JobClock{*limit, *left, f[3]};
}

std::optional<JobClock> ask_job_clock(const std::string& job_id, int timeout_seconds,
                                      const std::vector<std::string>* env)
{
    std::string problem;
    const auto answer =
        slurm_answer(bounded_command({"squeue", "--noheader", "--jobs=" + job_id, "--format=%l|%L|%e|%T"},
                                     timeout_seconds),
                     "squeue", timeout_seconds, problem, nullptr, env);
    if (!answer)
        return std::nullopt;
    return job_clock_in(*answer, static_cast<std::int64_t>(std::time(nullptr)));
}

}  // namespace dlstage
