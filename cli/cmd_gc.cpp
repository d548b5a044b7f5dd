// dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]: removes, on this
// node, what ended jobs left (job directories an epilog did not finish, a
// shared tier's unfinished claims, old records), as root, from a systemd
// timer or cron.  Slurm is asked once which jobs exist and which have
// processes on this node; without its answer nothing is removed.  What may
// go is policies/gc's decision; finding and removing is lib/gc_leftovers'.
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/gc_leftovers.hpp"
#include "lib/identity.hpp"
#include "lib/log.hpp"
#include "lib/slurm_jobs.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "policies/gc.hpp"

namespace dlstage::cli {

namespace {
// How long squeue may take before gc gives up (and removes nothing).
constexpr int kSlurmTimeout = 30;
// gc could not tell which jobs exist: nothing was removed.
constexpr int kExitNoSlurm = 3;
// How long the work on one tier (or the records) may take; what is left
// when it is stopped stays for the next run.
constexpr double kPartTimeout = 1800;

void print_help()
{
    std::cout << "Usage: dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]\n"
                 "Remove, on this node, what ended jobs left behind: job directories of tiers\n"
                 "with cleanup = \"job-end\" (an epilog that did not finish, a rebooted node),\n"
                 "unfinished removals (JOB.removing-NODE) in shared tiers, and job records in\n"
                 "state_dir older than site.gc_records_days.  A job Slurm still lists, or one\n"
                 "with processes on this node, keeps everything; if Slurm cannot be asked,\n"
                 "nothing is removed.  Root only.\n"
                 "\n"
                 "  --dry-run    say what would be removed and why; remove nothing\n"
                 "  --node NAME  this node's name in Slurm (%n, claims; default: the host name)\n"
                 "  --tier NAME  only this tier (records are then left alone)\n"
                 "  -v           also say what is kept and why\n"
                 "\n"
                 "Exit status: 0 done, 1 something could not be removed or was skipped,\n"
                 "2 usage error, 3 Slurm could not be asked (nothing removed).\n";
}

struct Options {
    bool dry_run = false;
    bool verbose = false;
    std::string node;
    std::string tier;
};

// The value of --NAME VALUE or --NAME=VALUE at args[i], or nothing.
bool take_value(const std::vector<std::string>& args, std::size_t& i, const std::string& name, std::string& into)
{
    const std::string& arg = args[i];
    if (arg == name && i + 1 < args.size()) {
        into = args[++i];
        return true;
    }
    if (starts_with(arg, name + "=")) {
        into = arg.substr(name.size() + 1);
        return true;
    }
    return false;
}

// What one part of gc (a tier, or the records) did, sent back from the
// bounded child that did it: lines for stdout and for stderr, and counts.
struct Outcome {
    toml::array out;
    toml::array err;
    std::int64_t removed = 0;
    std::int64_t kept = 0;
    std::int64_t problems = 0;

    std::string text() const
    {
        std::ostringstream o;
        o << toml::table{{"out", out}, {"err", err}, {"removed", removed}, {"kept", kept}, {"problems", problems}};
        return o.str();
    }
};

std::string about(const Leftover& l)
{
    return shown_path(l.path) + " (job " + l.job_id + ", " +
           (l.where == kRecordsPlace ? std::string("records") : "tier " + quoted(l.where)) + ")";
}

policy::GcFacts facts_of(const Leftover& l, const SlurmJobs& jobs)
{
    policy::GcFacts f;
    f.kind = l.kind;
    const SlurmJob* known = jobs.find(l.job_id);
    f.job = known ? policy::job_state_from_slurm(known->state) : policy::JobState::Ended;
    f.processes_here = jobs.here.count(l.job_id) > 0;
    f.age = jobs.asked_at - l.changed;
    f.mounted = l.mounted;
    return f;
}

void handle(const Leftover& l, const SlurmJobs& jobs, const policy::GcSettings& settings, const Options& options,
            Outcome& outcome)
{
    const policy::Verdict verdict = policy::gc_may_remove(facts_of(l, jobs), settings);
    if (!verdict.allowed) {
        ++outcome.kept;
        if (options.verbose)
            outcome.out.push_back("keep " + about(l) + ": " + verdict.reason);
        return;
    }
    if (options.dry_run) {
        ++outcome.removed;
        outcome.out.push_back("would remove " + about(l) + ": " + verdict.reason);
        return;
    }
    const RemoveResult result = remove_leftover(l, options.node);
    if (result.ok()) {
        ++outcome.removed;
        outcome.out.push_back("removed " + about(l) + ": " + verdict.reason);
        return;
    }
    ++outcome.problems;
    outcome.out.push_back("incomplete " + about(l) + ": " + verdict.reason);
    for (const std::string& problem : result.problems)
        outcome.err.push_back(problem);
}

// One part of the work: the leftovers `find` returns, each decided and
// handled.  It runs in a child bounded in time, as the epilog's work does:
// a tier whose file system hangs must not hold gc (or the next run).
Outcome run_part(const std::string& part, const std::function<Found()>& find, const SlurmJobs& jobs,
                 const policy::GcSettings& settings, const Options& options)
{
    const BoundedOutcome bounded = run_bounded(kPartTimeout, [&] {
        Outcome outcome;
        const Found found = find();
        for (const std::string& line : found.skipped) {
            ++outcome.problems;
            outcome.err.push_back(line);
        }
        for (const Leftover& l : found.leftovers)
            handle(l, jobs, settings, options, outcome);
        return outcome.text();
    });
    Outcome outcome;
    try {
        if (bounded.status != BoundedOutcome::Status::Done)
            throw Error(part + ": " + bounded.problem + " (a hung file system?); what is left stays for the next run");
        const toml::table report = parse_record(bounded.output, part);
        for (const auto& [list, into] : {std::pair{"out", &outcome.out}, {"err", &outcome.err}})
            if (const toml::array* lines = report[list].as_array())
                *into = *lines;
        outcome.removed = report["removed"].value_or(std::int64_t{0});
        outcome.kept = report["kept"].value_or(std::int64_t{0});
        outcome.problems = report["problems"].value_or(std::int64_t{0});
    } catch (const Error& e) {
        outcome.err.push_back(e.what());
        ++outcome.problems;
    }
    return outcome;
}

// The parts: each tier with cleanup = "job-end" (tiers sharing one path
// template once) and, unless one tier was asked for, the records.
// "keep" tiers hold users' data for later jobs; a "cache" tier's entries
// are the cache's to list (policy::GcKind::CacheEntry), once there is one.
std::vector<std::pair<std::string, std::function<Found()>>> parts_of(const Config& config, const Options& options)
{
    std::vector<std::pair<std::string, std::function<Found()>>> parts;
    std::set<std::string> templates;
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || tier.cleanup != Cleanup::JobEnd ||
            !templates.insert(tier.path.text()).second)
            continue;
        const Tier* t = &tier;
        parts.emplace_back("tier " + quoted(name), [t, &options] { return find_tier_leftovers(*t, options.node); });
    }
    if (options.tier.empty())
        parts.emplace_back(kRecordsPlace, [&config] { return find_job_records(config.site.state_dir); });
    return parts;
}
}  // namespace

int cmd_gc(const GlobalOptions& global, const std::vector<std::string>& args)
{
    Options options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "-h" || arg == "--help") {
            print_help();
            return kExitOk;
        }
        if (arg == "--dry-run")
            options.dry_run = true;
        else if (arg == "-v" || arg == "--verbose")
            options.verbose = true;
        else if (std::string value; take_value(args, i, "--node", value) || take_value(args, i, "--tier", value)) {
            if (value.empty())
                return usage_error("gc: " + arg + " needs a NAME", "gc");
            (starts_with(arg, "--node") ? options.node : options.tier) = value;
        } else if (arg == "--node" || arg == "--tier")
            return usage_error("gc: " + arg + " needs a NAME", "gc");
        else
            return usage_error("gc: unknown argument " + quoted(arg), "gc");
    }
    if (::geteuid() != 0) {
        say("gc: must run as root: it removes other users' job directories (run it from dlstage-gc.timer, "
            "cron or sudo)");
        return kExitFailure;
    }
    const Config config = load_trusted_config(choose_config_path(global.config_path, true));
    if (!options.tier.empty() && !config.find_tier(options.tier))
        return usage_error("gc: no tier " + quoted(options.tier) + " in " + config.file + " (tiers: " +
                               join(config.tier_names(), ", ") + ")",
                           "gc");
    if (const Tier* only = config.find_tier(options.tier); only && only->cleanup != Cleanup::JobEnd)
        std::cout << "tier " << quoted(options.tier) << " has cleanup = \"" << to_string(only->cleanup)
                  << "\": its data outlives jobs, nothing there is gc's\n";
    if (options.node.empty())
        options.node = this_node_name();

    const SlurmJobs jobs = ask_slurm(kSlurmTimeout, true);
    if (!jobs.asked) {
        say("gc: cannot tell which jobs still run: " + jobs.problem + "; nothing removed");
        return kExitNoSlurm;
    }
    const policy::GcSettings settings{config.site.gc_grace, config.site.gc_records_days, config.site.cache_idle_days};
    Outcome total;
    for (const auto& [part, find] : parts_of(config, options)) {
        const Outcome outcome = run_part(part, find, jobs, settings, options);
        for (const auto& line : outcome.out)
            std::cout << printable(line.value_or(std::string())) << "\n";
        std::cout.flush();
        for (const auto& line : outcome.err)
            say("gc: " + line.value_or(std::string()));
        total.removed += outcome.removed;
        total.kept += outcome.kept;
        total.problems += outcome.problems;
    }
    std::cout << "gc on " << options.node << (options.dry_run ? " (dry run): would remove " : ": removed ")
              << total.removed << ", kept " << total.kept << ", " << total.problems
              << (total.problems == 1 ? " problem" : " problems") << (options.dry_run ? "; nothing removed" : "")
              << "\n";
    return total.problems ? kExitFailure : kExitOk;
}

}  // namespace dlstage::cli
