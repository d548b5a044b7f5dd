// dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]: removes, on this
// node, what ended jobs left (job directories an epilog did not finish, a
// shared tier's unfinished claims, old records), as root, from a systemd
// timer or cron.  Slurm is asked once which jobs exist and which have
// processes on this node; without its answer nothing is removed.  What may
// go is policies/gc's decision; finding and removing is gc/gc_leftovers'.
#include <chrono>
#include <functional>
#include <optional>
#include <iostream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "policies/cache_eviction.hpp"
#include "tier/tier_measure.hpp"
#include "lib/size.hpp"
#include "tier/cache_entries.hpp"
#include "cli/options.hpp"
#include "config/config_paths.hpp"
#include "lib/error.hpp"
#include "gc/gc_leftovers.hpp"
#include "job/identity.hpp"
#include "lib/log.hpp"
#include "status/slurm_jobs.hpp"
#include "job/state_record.hpp"
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

// One part of gc, run in a child bounded in time, as the epilog's work is:
// a tier whose file system hangs must not hold gc (or the next run), nor
// may a lock the part takes outlive it.
Outcome run_bounded_part(const std::string& part, const std::function<Outcome()>& work)
{
    const BoundedOutcome bounded = run_bounded(kPartTimeout, [&] { return work().text(); });
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

// The leftovers `find` returns, each decided and handled.
Outcome leftovers_part(const std::function<Found()>& find, const SlurmJobs& jobs, const policy::GcSettings& settings,
                       const Options& options)
{
    Outcome outcome;
    const Found found = find();
    for (const std::string& line : found.skipped) {
        ++outcome.problems;
        outcome.err.push_back(line);
    }
    for (const Leftover& l : found.leftovers)
        handle(l, jobs, settings, options, outcome);
    return outcome;
}

// Whether a job that used a cache entry still runs (or has processes here).
bool still_running(const std::string& job, const SlurmJobs& jobs)
{
    const SlurmJob* known = jobs.find(job);
    return (known && policy::job_state_from_slurm(known->state) != policy::JobState::Ended) || jobs.here.count(job) > 0;
}

// Whether a running job uses the entry, by root's records as last read.
bool in_use(const NodeCacheEntry& e, const SlurmJobs& jobs)
{
    return std::any_of(e.jobs.begin(), e.jobs.end(), [&](const std::string& job) { return still_running(job, jobs); });
}

// Takes the node's cache lock into `lock`, or says why not (a problem).
bool take_cache_lock(std::optional<CacheLock>& lock, const Tier& tier, const Config& config, const Options& options,
                     Outcome& outcome)
{
    try {
        lock.emplace(config.site.state_dir, options.node, config.site.prolog_epilog_timeout);
        return true;
    } catch (const Error& e) {
        ++outcome.problems;
        outcome.err.push_back("tier " + quoted(tier.name) + ": " + e.what() +
                              "; the tier was skipped, run gc again later");
        return false;
    }
}

// Forgets the use records of jobs that ended (a crashed epilog's).
void forget_ended_uses(const Config& config, const SlurmJobs& jobs, const Options& options, Outcome& outcome)
{
    for (const std::string& job : cache_use_jobs(config.site.state_dir, options.node)) {
        if (still_running(job, jobs))
            continue;
        if (options.dry_run) {
            outcome.out.push_back("would forget job " + job + "'s use of the node cache: the job ended");
        } else {
            forget_cache_use(config.site.state_dir, options.node, job);
            outcome.out.push_back("forgot job " + job + "'s use of the node cache: the job ended");
        }
    }
}

// A node cache: first the use records of jobs that ended, then each
// entry, decided by policies/gc (idle too long, or next in line while the
// tier is over its high watermark; never one a running job uses).  The
// node's cache lock (which prologs take to record and evict) is held only
// to forget and to evict, each time at most half of prolog_epilog_timeout:
// measuring, the slow part, goes without it, and whether an entry is in
// use is read again under the lock before it goes.
Outcome cache_part(const Tier& tier, const Config& config, const SlurmJobs& jobs, const policy::GcSettings& settings,
                   const Options& options)
{
    Outcome outcome;
    const std::string& state_dir = config.site.state_dir;
    const double step = std::max(1.0, config.site.prolog_epilog_timeout / 4.0);
    {
        std::optional<CacheLock> lock;
        if (!take_cache_lock(lock, tier, config, options, outcome))
            return outcome;
        forget_ended_uses(config, jobs, options, outcome);
    }
    const std::uint64_t generation = eviction_generation(state_dir, options.node);
    FoundCacheEntries found = find_cache_entries(tier, state_dir, options.node, step);
    for (const std::string& problem : found.problems) {
        ++outcome.problems;
        outcome.err.push_back("tier " + quoted(tier.name) + ": " + problem);
    }
    std::vector<policy::CacheEntryFacts> facts;
    policy::CacheTierFacts tier_facts;
    TierSpace space;
    try {
        space = measure_tier_space(tier.path.root());
    } catch (const Error&) {
    }
    tier_facts.max_bytes = tier.max_bytes.resolve(space.total_bytes);
    tier_facts.max_inodes = tier.max_inodes;
    for (const NodeCacheEntry& e : found.entries) {
        // In dry-run, the use records of ended jobs are still there.
        facts.push_back({entry_name(e), e.bytes, e.inodes, e.last_use, in_use(e, jobs)});
        tier_facts.used_bytes += e.bytes;
        tier_facts.used_inodes += e.inodes;
    }
    policy::cap_at_file_system_use(tier_facts, space);
    const policy::EvictionPlan plan = policy::plan_eviction(facts, tier_facts, tier.watermarks);
    std::optional<CacheLock> lock;
    if (!options.dry_run) {
        if (!take_cache_lock(lock, tier, config, options, outcome))
            return outcome;
        refresh_cache_uses(found.entries, tier, state_dir, options.node);
    }
    // A prolog evicted since gc measured: the sizes no longer hold, and the
    // next run decides (a prolog makes room for its own job anyway).
    const bool measured_stale = !options.dry_run && eviction_generation(state_dir, options.node) != generation;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(2 * step);
    for (std::size_t i = 0; i < found.entries.size(); ++i) {
        const NodeCacheEntry& e = found.entries[i];
        policy::GcFacts f;
        f.kind = policy::GcKind::CacheEntry;
        f.in_use = in_use(e, jobs);  // the uses read again under the lock
        f.over_watermark = std::find(plan.evict.begin(), plan.evict.end(), i) != plan.evict.end();
        f.idle = e.last_use ? jobs.asked_at - e.last_use : 0;
        const policy::Verdict verdict = policy::gc_may_remove(f, settings);
        const std::string what = "cache entry " + entry_name(e) + " (tier " + quoted(tier.name) + ", " +
                                 format_size(e.bytes) + ")";
        if (!verdict.allowed) {
            ++outcome.kept;
            if (options.verbose)
                outcome.out.push_back("keep " + what + ": " + verdict.reason);
            continue;
        }
        if (options.dry_run) {
            ++outcome.removed;
            outcome.out.push_back("would remove " + what + ": " + verdict.reason);
            continue;
        }
        if (measured_stale) {
            ++outcome.kept;
            outcome.out.push_back("keep " + what + ": another eviction on this node since gc measured; the next run");
            continue;
        }
        const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
        if (left < 1) {
            ++outcome.kept;
            outcome.out.push_back("keep " + what + ": gc's time under the node cache lock is up; the next run");
            continue;
        }
        if (const std::string problem = evict_cache_entry(tier, e, std::min(step, left)); !problem.empty()) {
            ++outcome.problems;
            outcome.out.push_back("incomplete " + what + ": " + verdict.reason);
            outcome.err.push_back(problem);
            continue;
        }
        count_eviction(state_dir, options.node);
        ++outcome.removed;
        outcome.out.push_back("removed " + what + ": " + verdict.reason);
    }
    return outcome;
}

// The parts: each tier with cleanup = "job-end" (tiers sharing one path
// template once), each node cache and, unless one tier was asked for, the
// records.  "keep" tiers hold users' data for later jobs.
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
    // A node cache's job directories are the job's to remove, as job-end's.
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || tier.scope != Scope::Node ||
            tier.cleanup != Cleanup::Cache || !templates.insert(tier.path.text()).second)
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
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false},
                                   {"dry-run", 0, false},
                                   {"verbose", 'v', false},
                                   {"node", 0, true},
                                   {"tier", 0, true}});
    } catch (const UsageError& e) {
        return usage_error("gc: " + std::string(e.what()), "gc");
    }
    if (parsed.has("help")) {
        print_help();
        return kExitOk;
    }
    if (!parsed.operands.empty())
        return usage_error("gc: unexpected argument " + quoted(parsed.operands.front()), "gc");
    options.dry_run = parsed.has("dry-run");
    options.verbose = parsed.has("verbose");
    options.node = parsed.last("node").value_or("");
    options.tier = parsed.last("tier").value_or("");
    if ((parsed.has("node") && options.node.empty()) || (parsed.has("tier") && options.tier.empty()))
        return usage_error("gc: --node and --tier need a NAME", "gc");
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
    if (const Tier* only = config.find_tier(options.tier); only && only->cleanup == Cleanup::Keep)
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
    const auto report = [&total](const Outcome& outcome) {
        for (const auto& line : outcome.out)
            std::cout << printable(line.value_or(std::string())) << "\n";
        std::cout.flush();
        for (const auto& line : outcome.err)
            say("gc: " + line.value_or(std::string()));
        total.removed += outcome.removed;
        total.kept += outcome.kept;
        total.problems += outcome.problems;
    };
    for (const auto& [part, find] : parts_of(config, options))
        report(run_bounded_part(part, [&, find = find] { return leftovers_part(find, jobs, settings, options); }));
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || tier.scope != Scope::Node ||
            tier.cleanup != Cleanup::Cache)
            continue;
        report(run_bounded_part("tier " + quoted(name), [&, t = &tier] {
            try {
                return cache_part(*t, config, jobs, settings, options);
            } catch (const Error& e) {
                Outcome outcome;
                outcome.err.push_back("tier " + quoted(t->name) + ": " + e.what());
                ++outcome.problems;
                return outcome;
            }
        }));
    }
    std::cout << "gc on " << options.node << (options.dry_run ? " (dry run): would remove " : ": removed ")
              << total.removed << ", kept " << total.kept << ", " << total.problems
              << (total.problems == 1 ? " problem" : " problems") << (options.dry_run ? "; nothing removed" : "")
              << "\n";
    return total.problems ? kExitFailure : kExitOk;
}

}  // namespace dlstage::cli
