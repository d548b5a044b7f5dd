#include "status/status_query.hpp"

#include <algorithm>
#include <unistd.h>

#include "job/job_records.hpp"
#include "lib/number.hpp"
#include "status/mover_rows.hpp"

namespace dlstage {

namespace {
bool wanted(const StatusRow& row, const StatusQuery& query, bool explicit_jobs)
{
    if (query.dataset && row.dataset != *query.dataset)
        return false;
    if (!query.states.empty() && !query.states.count(row.state))
        return false;
    if (!query.jobs.empty() &&
        std::none_of(query.jobs.begin(), query.jobs.end(), [&](const JobSelector& s) { return s.matches(row); }))
        return false;
    if (!query.users.empty())
        return query.users.count(row.user) > 0;
    // Your own unless asked for more (what a user can read is theirs
    // anyway); --dataset, like its copies, shows root every user's.
    return explicit_jobs || query.all || query.dataset || !row.uid ||
           *row.uid == static_cast<std::int64_t>(::geteuid());
}

// The jobs whose records are read: only those named, unless one may be an
// array (its tasks' own ids are others) or Slurm cannot say it is none,
// then every job's.
std::vector<std::string> jobs_to_read(const std::string& state_dir, const StatusQuery& query, const SlurmJobs& slurm)
{
    std::vector<std::string> named;
    for (const JobSelector& s : query.jobs) {
        // Slurm forgot it: its records alone can tell whether it was an array.
        const bool array = !s.task.empty() || !slurm.find(s.job) ||
                           std::any_of(slurm.jobs.begin(), slurm.jobs.end(),
                                       [&](const auto& job) { return job.second.array_job_id == s.job; });
        if (array)
            return recorded_job_ids(state_dir);
        named.push_back(s.job);
    }
    if (named.empty())
        return recorded_job_ids(state_dir);
    std::sort(named.begin(), named.end(), job_id_less);
    named.erase(std::unique(named.begin(), named.end()), named.end());
    return named;
}

}  // namespace

std::vector<StatusRow> find_status_rows(const std::string& state_dir, const StatusQuery& query, const SlurmJobs& slurm,
                                        const std::vector<mover::MoverWait>& waits)
{
    std::vector<StatusRow> rows;
    std::set<std::string> recorded;
    const bool explicit_jobs = !query.jobs.empty();
    for (const std::string& job_id : jobs_to_read(state_dir, query, slurm)) {
        const JobRecords job = read_job_records(state_dir, job_id);
        if (job.empty())
            continue;
        recorded.insert(job_id);
        for (StatusRow& row : status_rows(job, slurm))
            if (wanted(row, query, explicit_jobs))
                rows.push_back(std::move(row));
    }
    // Jobs waiting for a mover job have no records yet (one whose records
    // were not read is not among the jobs asked for).
    for (StatusRow& row : mover_wait_rows(state_dir, waits, recorded, slurm))
        if (wanted(row, query, explicit_jobs))
            rows.push_back(std::move(row));
    // As squeue lists them: by job id, an array's tasks under its id in task order.
    std::sort(rows.begin(), rows.end(), [](const StatusRow& a, const StatusRow& b) {
        const std::string& a_job = a.array_job_id.empty() ? a.job_id : a.array_job_id;
        const std::string& b_job = b.array_job_id.empty() ? b.job_id : b.array_job_id;
        if (a_job != b_job)
            return job_id_less(a_job, b_job);
        if (a.array_task_id != b.array_task_id)
            return job_id_less(a.array_task_id, b.array_task_id);
        return a.dataset < b.dataset;
    });
    return rows;
}

std::vector<std::string> unmatched(const std::vector<JobSelector>& jobs, const std::vector<StatusRow>& rows)
{
    std::vector<std::string> missing;
    for (const JobSelector& s : jobs)
        if (std::none_of(rows.begin(), rows.end(), [&](const StatusRow& row) { return s.matches(row); }))
            missing.push_back(s.text());
    return missing;
}

}  // namespace dlstage
