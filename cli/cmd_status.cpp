// dlstage status: staging as squeue shows jobs.  One row per (job,
// dataset), its state derived from the job's records in state_dir/jobs/
// (status/job_status.hpp) and from what Slurm says of the job now (one squeue
// call, job/slurm_jobs.hpp); columns as squeue's -o picks them, times and
// sizes as Slurm prints them (status/status_format.hpp).  The records of a
// job are its user's (0700): users see their own jobs, root every user's.
//
// --dataset NAME: where it is kept (cli/status_copies.cpp) and staged;
// --node NODE: the tiers of this node (cli/status_node.cpp).
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <set>
#include <unistd.h>

#include <toml++/toml.h>

#include "build-aux/config.h"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/table.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "job/job_records.hpp"
#include "job/slurm_jobs.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "status/job_status.hpp"
#include "status/status_format.hpp"
#include "status/status_query.hpp"

namespace dlstage::cli {

namespace {
// squeue gets this long to answer; then the states it would decide are "unknown".
constexpr int kSqueueSeconds = 10;

void print_help()
{
    std::cout << "Usage: dlstage status [OPTIONS] [JOBID...]\n"
                 "       dlstage status --dataset NAME [--json]\n"
                 "       dlstage status --node NODE [--json]\n"
                 "Show staging as squeue shows jobs: one row per job and dataset with its state:\n"
                 "pending, staging (DONE percent, RATE), ready, reused, cache-hit, failed (with the\n"
                 "reason), cleaned (the epilog removed the data), stale (the records claim data\n"
                 "but Slurm no longer runs the job), unknown (Slurm could not be asked).\n"
                 "Without JOBID: the current job inside a job, else your own jobs.\n"
                 "\n"
                 "  -j, --jobs LIST     these jobs: 123, 123_4 (task 4 of array 123; 123 is all\n"
                 "                      its tasks), comma-separated; JOBID... is the same\n"
                 "  -u, --user LIST     these users' jobs (root; a user sees only their own)\n"
                 "  --all               every user's jobs (root; a user sees only their own)\n"
                 "  -t, --states LIST   only these states, e.g. staging,failed\n"
                 "  -o, --format FMT    columns as squeue's -o: %.8i right-aligned in 8, %8i\n"
                 "                      left-aligned, %i as long as it is; default\n"
                 "                      \""
              << kDefaultStatusFormat
              << "\" (aligned)\n"
                 "  -h, --noheader      no header line (and no cache-hit or failure lines)\n"
                 "  --json              {\"meta\": {...}, \"jobs\": [...]}: ids and counts as numbers,\n"
                 "                      times as epoch seconds, sizes in bytes\n"
                 "  --dataset NAME      where NAME is kept in shared tiers (yours; root: all\n"
                 "                      users') and which jobs stage it now\n"
                 "  --node NODE         on NODE itself (srun -w NODE dlstage status --node NODE):\n"
                 "                      each tier's space and limits, and what is in it\n"
                 "  --help              this text\n"
                 "\n"
                 "Fields for -o:";
    for (const StatusField& field : status_fields())
        std::cout << " %" << field.letter << " " << field.header;
    std::cout << "\n";
}

struct StatusOptions {
    StatusQuery query;
    bool json = false;
    bool header = true;
    std::optional<std::string> format;
    std::optional<std::string> node;
};

std::set<StagingState> parse_states(const std::string& list)
{
    std::set<StagingState> states;
    for (const std::string& word : split(list, ',')) {
        const auto state = state_from_word(word);
        if (!state)
            throw Error("unknown state " + quoted(word) + " (known: " + join(state_words(), ", ") + ")");
        states.insert(*state);
    }
    return states;
}

const std::vector<OptionSpec> kStatusOptions = {
    {"help", 0, false},  {"json", 0, false},  {"noheader", 'h', false}, {"all", 'a', false},  {"format", 'o', true},
    {"jobs", 'j', true}, {"user", 'u', true}, {"states", 't', true},    {"dataset", 0, true}, {"node", 0, true},
};

// Throws UsageError, or Error with the message for a usage error.
StatusOptions parse_options(const std::vector<std::string>& args, bool& help)
{
    const ParsedArgs parsed = parse_args(args, kStatusOptions);
    StatusOptions o;
    for (const auto& [name, value] : parsed.given) {
        if (name == "help")
            help = true;
        else if (name == "json")
            o.json = true;
        else if (name == "noheader")
            o.header = false;
        else if (name == "all")
            o.query.all = true;
        else if (name == "format")
            o.format = value;
        else if (name == "jobs")
            for (JobSelector& s : parse_job_list(value))
                o.query.jobs.push_back(std::move(s));
        else if (name == "user")
            for (const std::string& user : split(value, ','))
                o.query.users.insert(user);
        else if (name == "states")
            o.query.states = parse_states(value);
        else if (name == "dataset")
            o.query.dataset = value;
        else if (name == "node")
            o.node = value;
    }
    for (const std::string& operand : parsed.operands)
        for (JobSelector& s : parse_job_list(operand))
            o.query.jobs.push_back(std::move(s));
    return o;
}

void print_table(const std::vector<StatusRow>& rows, const StatusOptions& o, const std::string& state_dir)
{
    if (o.format) {
        const std::vector<FormatItem> items = parse_status_format(*o.format);
        if (o.header)
            std::cout << format_line(items, nullptr) << "\n";
        for (const StatusRow& row : rows)
            std::cout << format_line(items, &row) << "\n";
        return;
    }
    const std::vector<FormatItem> items = parse_status_format(kDefaultStatusFormat);
    std::vector<std::vector<std::string>> table;
    if (o.header)
        table.push_back(format_cells(items, nullptr));
    for (const StatusRow& row : rows)
        table.push_back(format_cells(items, &row));
    if (!rows.empty())
        print_aligned(std::cout, table);
    if (!o.header)
        return;
    // Where each job found its data, then each failed node's whole
    // reason, which the table's column cuts short.
    for (const StatusRow& row : rows)
        if (const std::string line = cache_hit_line(row); !line.empty())
            std::cout << line << "\n";
    std::set<std::string> told;
    for (const StatusRow& row : rows) {
        if (row.reason.empty() || !told.insert(row.job_id).second)
            continue;
        for (const toml::table& failure : read_job_records(state_dir, row.job_id).failures)
            std::cout << "job " << row.job_id << ": failed on " << printable(failure["node"].value_or(std::string("?")))
                      << ": " << printable(failure["message"].value_or(std::string())) << "\n";
    }
    if (rows.empty())
        std::cout << "no staging records" << (o.query.jobs.size() == 1 ? " for job " + o.query.jobs.front().text() : "")
                  << " in " << jobs_dir(state_dir) << "\n";
}

}  // namespace

int cmd_status(const GlobalOptions& options, const std::vector<std::string>& args)
{
    bool help = false;
    StatusOptions o;
    try {
        o = parse_options(args, help);
        if (o.format)
            parse_status_format(*o.format);
    } catch (const UsageError& e) {
        return usage_error("status: " + std::string(e.what()), "status");
    } catch (const Error& e) {
        return usage_error("status: " + std::string(e.what()), "status");
    }
    if (help) {
        print_help();
        return kExitOk;
    }
    if (o.query.dataset && !o.query.jobs.empty())
        return usage_error("status: --dataset and JOBID do not go together", "status");
    if (o.node && (o.query.dataset || !o.query.jobs.empty()))
        return usage_error("status: --node goes with no JOBID and no --dataset", "status");
    const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
    if (o.node)
        return print_node(config, *o.node, o.json);
    if (o.query.dataset && !config.find_dataset(*o.query.dataset))
        return usage_error("status: no dataset " + quoted(*o.query.dataset) +
                               " in the catalog ('dlstage catalog list')",
                           "status");
    if (::geteuid() != 0 && (o.query.all || !o.query.users.empty()))
        say("status: the records of other users' jobs are theirs (mode 0700): showing your own only");

    const bool explicit_jobs = !o.query.jobs.empty();
    if (!explicit_jobs && !o.query.dataset)
        if (const char* current = std::getenv(kJobIdVar); current && *current)
            o.query.jobs.push_back({naming(kJobIdVar, [&] { return slurm_number(current); }), ""});

    const std::string& state_dir = config.site.state_dir;
    const SlurmJobs slurm = ask_slurm(kSqueueSeconds);
    std::string unasked;  // no answer: no rows of waiting jobs, as before two-hop staging
    const std::vector<StatusRow> rows =
        find_status_rows(state_dir, o.query, slurm,
                         slurm.asked ? mover::ask_mover_waits(unasked, slurm) : std::vector<mover::MoverWait>{});
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    if (o.query.dataset) {
        const toml::table jobs = status_json(rows, slurm, PACKAGE_VERSION, now);
        const int rc = print_copies(config, *o.query.dataset, o.json, o.json ? jobs["jobs"].as_array() : nullptr);
        if (!o.json && !rows.empty()) {
            std::cout << "\n";
            print_table(rows, o, state_dir);
        }
        return rc;
    }
    if (o.json)
        std::cout << toml::json_formatter{status_json(rows, slurm, PACKAGE_VERSION, now)} << "\n";
    else
        print_table(rows, o, state_dir);
    if (explicit_jobs) {
        if (const std::vector<std::string> missing = unmatched(o.query.jobs, rows); !missing.empty()) {
            say("no staging records for job " + join(missing, ", ") + " in " + jobs_dir(state_dir) +
                " (not a --stage-data job, not started yet, or not yours)");
            return kExitFailure;
        }
    }
    return kExitOk;
}

}  // namespace dlstage::cli
