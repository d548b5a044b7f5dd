#include "gc/gc_run.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gc/gc_cache.hpp"
#include "gc/gc_leftovers.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "policies/gc.hpp"
#include "policies/node_features.hpp"
#include "tier/cache_features.hpp"

namespace dlstage {

namespace {
// How long the work on one tier (or the records) may take; what is left
// when it is stopped stays for the next run.
constexpr double kPartTimeout = 1800;

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

void handle(const Leftover& l, const SlurmJobs& jobs, const policy::GcSettings& settings, const GcRequest& options,
            GcOutcome& outcome)
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

// What the node cache parts found of dlstage's node features, together.
struct NodeCacheFeatures {
    std::set<std::string> whole, gone;
    bool all_known = true;

    void add(const GcOutcome& part)
    {
        for (const auto& feature : part.features)
            whole.insert(feature.value_or(std::string()));
        for (const auto& feature : part.features_gone)
            gone.insert(feature.value_or(std::string()));
        all_known = all_known && part.features_known;
    }
};

// The node's features set to what every node cache holds, when every
// entry was found (which puts back what a slurmctld restart lost), else
// those found added and the evicted ones' removed.
GcOutcome set_node_features_part(const Config& config, const NodeCacheFeatures& found, const GcRequest& options)
{
    GcOutcome outcome;
    const double seconds = std::max(3.0, config.site.prolog_epilog_timeout / 2.0);
    std::vector<std::string> problems;
    if (found.all_known) {
        problems.push_back(
            change_node_features(config, options.node, found.whole, policy::FeatureChange::Replace, seconds));
    } else {
        problems.push_back(
            change_node_features(config, options.node, found.gone, policy::FeatureChange::Remove, seconds));
        problems.push_back(
            change_node_features(config, options.node, found.whole, policy::FeatureChange::Add, seconds));
    }
    // Jobs Slurm holds for a preference of dlstage's it cannot meet now
    // (its nodes drained or down since the job was submitted) run elsewhere.
    const ReleasedJobs released = release_held_jobs(config, seconds);
    problems.push_back(released.problem);
    if (released.released > 0)
        outcome.out.push_back("released " + std::to_string(released.released) +
                              " pending job(s) Slurm held for nodes holding their datasets that cannot take jobs now");
    for (const std::string& problem : problems)
        if (!problem.empty()) {
            outcome.err.push_back(problem);
            ++outcome.problems;
        }
    if (options.verbose)
        outcome.out.push_back("node features: " + std::to_string(found.whole.size()) + " of dlstage's on " +
                              options.node + (found.all_known ? "" : " (added; some entries were not found)"));
    return outcome;
}

// One part of gc, run in a child bounded in time, as the epilog's work is:
// a tier whose file system hangs must not hold gc (or the next run), nor
// may a lock the part takes outlive it.
GcOutcome run_bounded_part(const std::string& part, const std::function<GcOutcome()>& work)
{
    const BoundedOutcome bounded = run_bounded(kPartTimeout, [&] { return work().text(); });
    GcOutcome outcome;
    try {
        if (bounded.status != BoundedOutcome::Status::Done)
            throw Error(part + ": " + bounded.problem + " (a hung file system?); what is left stays for the next run");
        const toml::table report = parse_record(bounded.output, part);
        for (const auto& [list, into] : {std::pair{"out", &outcome.out},
                                         {"err", &outcome.err},
                                         {"features", &outcome.features},
                                         {"features_gone", &outcome.features_gone}})
            if (const toml::array* lines = report[list].as_array())
                *into = *lines;
        outcome.removed = report["removed"].value_or(std::int64_t{0});
        outcome.kept = report["kept"].value_or(std::int64_t{0});
        outcome.problems = report["problems"].value_or(std::int64_t{0});
        outcome.features_known = report["features_known"].value_or(false);
    } catch (const Error& e) {
        outcome.err.push_back(e.what());
        ++outcome.problems;
    }
    return outcome;
}

// The leftovers `find` returns, each decided and handled.
GcOutcome leftovers_part(const std::function<Found()>& find, const SlurmJobs& jobs, const policy::GcSettings& settings,
                         const GcRequest& options)
{
    GcOutcome outcome;
    const Found found = find();
    for (const std::string& line : found.skipped) {
        ++outcome.problems;
        outcome.err.push_back(line);
    }
    for (const Leftover& l : found.leftovers)
        handle(l, jobs, settings, options, outcome);
    return outcome;
}

// The parts: each tier with cleanup = "job-end" (tiers sharing one path
// template once), each node cache and, unless one tier was asked for, the
// records.  "keep" tiers hold users' data for later jobs.
std::vector<std::pair<std::string, std::function<Found()>>> parts_of(const Config& config, const GcRequest& options)
{
    std::vector<std::pair<std::string, std::function<Found()>>> parts;
    std::set<std::string> templates;
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || !tier.gone_at_job_end() ||
            !templates.insert(tier.path.text()).second)
            continue;
        const Tier* t = &tier;
        parts.emplace_back("tier " + quoted(name), [t, &options] { return find_tier_leftovers(*t, options.node); });
    }
    // A node cache's job directories are the job's to remove, as job-end's.
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || !tier.node_cache() ||
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

void run_gc(const Config& config, const SlurmJobs& jobs, const std::function<SlurmJobs()>& ask_slurm_now,
            const GcRequest& options, const std::function<void(const GcOutcome&)>& report)
{
    const policy::GcSettings settings{config.site.gc_grace, config.site.gc_records_days, config.site.cache_idle_days};
    for (const auto& [part, find] : parts_of(config, options))
        report(run_bounded_part(part, [&, find = find] { return leftovers_part(find, jobs, settings, options); }));
    NodeCacheFeatures features;
    for (const auto& [name, tier] : config.tiers) {
        if ((!options.tier.empty() && name != options.tier) || !tier.node_cache())
            continue;
        const GcOutcome outcome = run_bounded_part("tier " + quoted(name), [&, t = &tier] {
            try {
                return gc_node_cache(*t, config, ask_slurm_now, settings, options);
            } catch (const Error& e) {
                GcOutcome failed;
                failed.err.push_back("tier " + quoted(t->name) + ": " + e.what());
                ++failed.problems;
                return failed;
            }
        });
        features.add(outcome);
        report(outcome);
    }
    if (config.locality.node_features && !options.dry_run && options.tier.empty())
        report(run_bounded_part("node features", [&] { return set_node_features_part(config, features, options); }));
}

}  // namespace dlstage
