// dlstage status [--json] [JOBID...]: how staging goes, from the records the
// stager keeps in state_dir/jobs/<job>/user/ (progress-<dataset>.toml,
// written by rank 0 every few seconds; failure-<node>.toml, by a failing
// rank).  Those directories belong to the job's user (0700): users see
// their own jobs, root sees all.
//
// This is the first part of the roadmap's `dlstage status`; node and
// prolog/epilog records join it later.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/job_records.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/record_field.hpp"
#include "lib/size.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage status [--json] [JOBID...]\n"
                 "       dlstage status --dataset NAME [--json]\n"
                 "Show how staging goes for jobs: per dataset its tier, state (staging, ready),\n"
                 "nodes, bytes done of the total, rate, ETA and the age of the figures, then any\n"
                 "node's failure.  The stager updates them every DLSTAGE_PROGRESS seconds.\n"
                 "Without JOBID: the current job inside a job, else every job whose records you\n"
                 "may read (your own; root: all).\n"
                 "\n"
                 "  --json     print a JSON array of jobs instead of a table\n"
                 "  --dataset NAME\n"
                 "             the copies of NAME kept in shared tiers (yours; root: all users'):\n"
                 "             path, size, files, when made and last used, uses, purge date\n";
}

std::int64_t integer(const toml::table& record, const char* key)
{
    return integer_field(record, key).value_or(0);
}

std::string seconds_cell(double seconds)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f s", seconds);
    return text;
}

std::vector<std::string> progress_row(const std::string& job_id, const toml::table& r, std::time_t now)
{
    const auto total = static_cast<std::uint64_t>(std::max<std::int64_t>(integer(r, "bytes_total"), 0));
    const auto done = static_cast<std::uint64_t>(std::max<std::int64_t>(integer(r, "bytes_done"), 0));
    const std::string state = r["state"].value_or(std::string("?"));
    char percent[16];
    std::snprintf(percent, sizeof percent, "%.0f%%", total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.2f GB/s", r["bytes_per_s"].value_or(0.0) / 1e9);
    // Clamped first: a record's time may be anything, now - time must not overflow.
    const std::int64_t age = now - std::clamp<std::int64_t>(integer(r, "time"), 0, now);
    // Records are written by the job's user: nothing in them may forge a
    // line or a terminal escape in root's listing.
    return {job_id,
            printable(r["dataset"].value_or(std::string("?"))),
            printable(r["tier"].value_or(std::string("?"))),
            printable(state),
            std::to_string(integer(r, "nodes")),
            format_size(done) + " / " + format_size(total) + " (" + percent + ")",
            std::to_string(integer(r, "files_total")),
            rate,
            state == kStagingState ? seconds_cell(r["eta_s"].value_or(0.0)) : "-",
            std::to_string(age) + " s ago"};
}

void print_table(const std::vector<JobRecords>& jobs)
{
    const std::time_t now = std::time(nullptr);
    std::vector<std::vector<std::string>> rows = {
        {"JOB", "DATASET", "TIER", "STATE", "NODES", "DONE", "FILES", "RATE", "ETA", "UPDATED"}};
    for (const JobRecords& job : jobs)
        for (const toml::table& record : job.progress)
            rows.push_back(progress_row(job.job_id, record, now));
    if (rows.size() > 1)
        print_aligned(std::cout, rows);
    for (const JobRecords& job : jobs)
        for (const toml::table& failure : job.failures)
            std::cout << "job " << job.job_id << ": failed on " << printable(failure["node"].value_or(std::string("?")))
                      << ": " << printable(failure["message"].value_or(std::string())) << "\n";
}

void print_json(const std::vector<JobRecords>& jobs)
{
    toml::array list;
    for (const JobRecords& job : jobs) {
        toml::array datasets, failures;
        for (const toml::table& record : job.progress)
            datasets.push_back(record);
        for (const toml::table& record : job.failures)
            failures.push_back(record);
        list.push_back(toml::table{{"job_id", job.job_id}, {"datasets", datasets}, {"failures", failures}});
    }
    std::cout << toml::json_formatter{list} << "\n";
}
}  // namespace

int cmd_status(const GlobalOptions& options, const std::vector<std::string>& args)
{
    bool json = false;
    std::vector<std::string> wanted;
    std::optional<std::string> dataset;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "-h" || arg == "--help") {
            print_help();
            return kExitOk;
        }
        if (arg == "--json") {
            json = true;
        } else if (arg == "--dataset" || arg.rfind("--dataset=", 0) == 0) {
            if (arg == "--dataset" && i + 1 == args.size())
                return usage_error("status: --dataset needs a dataset name", "status");
            dataset = arg == "--dataset" ? args[++i] : arg.substr(10);
        } else {
            try {
                wanted.push_back(slurm_number(arg));
            } catch (const Error&) {
                return usage_error("status: " + quoted(arg) + " is not a job id (a number) or an option", "status");
            }
        }
    }
    const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
    if (dataset) {
        if (!wanted.empty())
            return usage_error("status: --dataset and JOBID do not go together", "status");
        if (!config.find_dataset(*dataset))
            return usage_error("status: no dataset " + quoted(*dataset) + " in the catalog ('dlstage catalog list')",
                               "status");
        return print_copies(config, *dataset, json);
    }
    const std::string& state_dir = config.site.state_dir;
    const bool explicit_jobs = !wanted.empty();
    if (!explicit_jobs) {
        if (const char* current = std::getenv(kJobIdVar); current && *current)
            wanted.push_back(naming(kJobIdVar, [&] { return slurm_number(current); }));
        else
            wanted = recorded_job_ids(state_dir);
    }
    std::sort(wanted.begin(), wanted.end(), job_id_less);

    std::vector<JobRecords> jobs;
    std::vector<std::string> missing;
    for (const std::string& job_id : wanted) {
        if (JobRecords job = read_job_records(state_dir, job_id); !job.empty())
            jobs.push_back(std::move(job));
        else
            missing.push_back(job_id);
    }
    if (json)
        print_json(jobs);
    else
        print_table(jobs);
    if (explicit_jobs && !missing.empty()) {
        say("no staging records for job " + join(missing, ", ") + " in " + jobs_dir(state_dir) +
                    " (not a --stage-data job, not started yet, or not yours)");
        return kExitFailure;
    }
    if (jobs.empty() && !json)
        std::cout << "no staging records" << (wanted.size() == 1 ? " for job " + wanted.front() : "") << " in "
                  << jobs_dir(state_dir) << "\n";
    return kExitOk;
}

}  // namespace dlstage::cli
