#include "gc/gc_cache.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "lib/deadline.hpp"
#include "lib/error.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "policies/cache_budget.hpp"
#include "policies/cache_eviction.hpp"
#include "tier/cache_evict.hpp"
#include "tier/cache_features.hpp"
#include "tier/cache_measure.hpp"
#include "tier/cache_records.hpp"
#include "tier/tier_measure.hpp"

namespace dlstage {

namespace {
// How long measuring every entry may take (without the lock): well within
// the part's own bound (gc/gc_run), what is left out waits for the next run.
constexpr double kMeasureSeconds = 600;

// When each job's use record was written, by job.
using UseRecords = std::map<std::string, std::int64_t>;

UseRecords use_records(const Config& config, const GcRequest& options)
{
    UseRecords records;
    for (const auto& [job, written] : cache_use_records(config.site.state_dir, options.node))
        records[job] = written;
    return records;
}

// Whether a job's recorded use of the node cache still holds
// (policy::cache_use_holds): a job Slurm lists, one with processes here,
// or one whose use was recorded around Slurm's answer.
bool use_holds(const std::string& job, const SlurmJobs& jobs, const UseRecords& records,
               const policy::GcSettings& settings)
{
    const SlurmJob* known = jobs.find(job);
    const auto record = records.find(job);
    const std::int64_t age = record == records.end() ? std::numeric_limits<std::int64_t>::max() / 2
                                                     : jobs.asked_at - record->second;
    return policy::cache_use_holds(known && policy::job_started(known->state), jobs.here.count(job) > 0, age, settings);
}

// Whether a running job uses the entry, by root's records as last read.
bool in_use(const NodeCacheEntry& e, const SlurmJobs& jobs, const UseRecords& records,
            const policy::GcSettings& settings)
{
    return std::any_of(e.jobs.begin(), e.jobs.end(),
                       [&](const std::string& job) { return use_holds(job, jobs, records, settings); });
}

// Whether a running job of the entry's owner uses the tier here.
bool owner_busy(const NodeCacheEntry& e, const SlurmJobs& jobs, const UseRecords& records,
                const policy::GcSettings& settings)
{
    return std::any_of(e.owner_jobs().begin(), e.owner_jobs().end(),
                       [&](const std::string& job) { return use_holds(job, jobs, records, settings); });
}

// Before evicting an entry nobody measured (what it gives back is
// unknown): whether the tier's file system is still over its low
// watermark.  Not when it cannot say.
bool file_system_over_low(const Tier& tier, const policy::CacheTierFacts& facts)
{
    try {
        return policy::over_low_by_file_system(facts, measure_tier_space(tier.path.root()), tier.watermarks);
    } catch (const Error&) {
        return false;
    }
}

// Takes the node's cache lock into `lock`, or says why not (a problem).
bool take_cache_lock(std::optional<CacheLock>& lock, const Tier& tier, const Config& config, const GcRequest& options,
                     GcOutcome& outcome)
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
void forget_ended_uses(const Config& config, const SlurmJobs& jobs, const policy::GcSettings& settings,
                       const GcRequest& options, GcOutcome& outcome)
{
    const UseRecords records = use_records(config, options);
    for (const auto& [job, written] : records) {
        if (use_holds(job, jobs, records, settings))
            continue;
        if (options.dry_run) {
            outcome.out.push_back("would forget job " + job + "'s use of the node cache: the job ended");
        } else {
            forget_cache_use(config.site.state_dir, options.node, job);
            outcome.out.push_back("forgot job " + job + "'s use of the node cache: the job ended");
        }
    }
}
}  // namespace

// Slurm is asked afresh here, not trusted from gc's start: the parts before
// may have taken long (a leftover of millions of files), and a job that
// started meanwhile would count as ended.  The node's cache lock (which
// prologs take to record and evict) is held only to forget and to evict,
// evicting as long as a prolog may hold it (policies/cache_budget's
// under_lock), so that a prolog waiting for it outlasts gc: measuring, the slow
// part, goes without it, and whether an entry is in use is read again
// under the lock before it goes.
namespace {
// The node features of the entries kept whole, and of those evicted, for
// gc's features part (gc/gc_run, tier/cache_features).  A measurement
// another's eviction made stale (`fresh` false) names only those gc
// evicted: it may still list an entry a prolog has evicted since.
// Of the entries kept whole, those whose source changed since they were
// cached, or is gone (tier/cache_features attraction_of, as each owner)
// leave `kept`:
// their feature goes, and no job is steered to a copy it would stage again.
void drop_changed(const Config& config, const Tier& tier, std::vector<NodeCacheEntry>& kept, double seconds,
                  GcOutcome& outcome)
{
    std::map<uid_t, std::vector<std::string>> whole;
    for (const NodeCacheEntry& entry : kept)
        if (entry.ready && !entry.aside && !entry.unlisted &&
            !cache_entry_feature(config, entry.uid, entry.dataset).empty())
            whole[entry.uid].push_back(entry.dataset);
    for (const auto& user_entries : whole) {
        const uid_t uid = user_entries.first;  // (a lambda captures no structured binding in C++17)
        // A copy: the erasing below moves what `kept` holds.
        const NodeCacheEntry owner =
            *std::find_if(kept.begin(), kept.end(), [&](const NodeCacheEntry& e) { return e.uid == uid; });
        const EntryAttraction attraction = attraction_of(config, tier, owner, user_entries.second, seconds);
        for (const auto& refused : attraction.refused) {
            const std::string& name = refused.first;
            const std::string& why = refused.second;
            // The names are the user's, the reason came through their process.
            outcome.out.push_back("tier " + quoted(tier.name) + ": " + owner.user + "'s " + printable(name) + ": " +
                                  printable(why) +
                                  ": no node feature (the next job that stages it here caches it again)");
            kept.erase(std::remove_if(kept.begin(), kept.end(),
                                      [&](const NodeCacheEntry& e) { return e.uid == uid && e.dataset == name; }),
                       kept.end());
        }
    }
}

void add_features(const Config& config, const Tier& tier, const std::vector<NodeCacheEntry>& entries,
                  const std::vector<bool>& evicted, bool fresh, double seconds, GcOutcome& outcome)
{
    outcome.features_known = outcome.features_known && fresh;
    std::vector<NodeCacheEntry> kept, gone;
    for (std::size_t i = 0; i < entries.size(); ++i)
        (evicted[i] ? gone : kept).push_back(entries[i]);
    if (fresh && config.locality.node_features)
        drop_changed(config, tier, kept, seconds, outcome);
    if (fresh)
        for (const std::string& feature : whole_entry_features(config, kept))
            outcome.features.push_back(feature);
    for (NodeCacheEntry& entry : gone)
        entry.ready = true;  // its feature goes whether or not it was whole
    for (const std::string& feature : whole_entry_features(config, gone))
        outcome.features_gone.push_back(feature);
}
}  // namespace

GcOutcome gc_node_cache(const Tier& tier, const Config& config, const std::function<SlurmJobs()>& ask_slurm_now,
                        const policy::GcSettings& settings, const GcRequest& options)
{
    GcOutcome outcome;
    const SlurmJobs jobs = ask_slurm_now();
    if (!jobs.asked) {
        ++outcome.problems;
        outcome.err.push_back("tier " + quoted(tier.name) + ": cannot tell which jobs still run: " + jobs.problem +
                              "; the node cache was left alone");
        return outcome;
    }
    const std::string& state_dir = config.site.state_dir;
    const double step = std::max(1.0, config.site.prolog_epilog_timeout / 4.0);
    {
        std::optional<CacheLock> lock;
        if (!take_cache_lock(lock, tier, config, options, outcome))
            return outcome;
        forget_ended_uses(config, jobs, settings, options, outcome);
    }
    const std::uint64_t generation = eviction_generation(state_dir, options.node);
    FoundCacheEntries found = find_cache_entries(tier, state_dir, options.node, step, kMeasureSeconds);
    for (const std::string& problem : found.problems) {
        ++outcome.problems;
        outcome.err.push_back("tier " + quoted(tier.name) + ": " + problem);
    }
    outcome.features_known = found.problems.empty();
    UseRecords records = use_records(config, options);
    std::vector<policy::CacheEntryFacts> facts;
    policy::CacheTierFacts tier_facts;
    TierSpace space;
    try {
        space = measure_tier_space(tier.path.root());
    } catch (const Error&) {
    }
    tier_facts.max_bytes = tier.max_bytes.resolve(space.total_bytes);
    tier_facts.max_inodes = tier.max_inodes;
    tier_facts.own_file_system = has_own_file_system(tier.path.root());
    bool any_unmeasured = false;
    for (const NodeCacheEntry& e : found.entries) {
        // In dry-run, the use records of ended jobs are still there.
        facts.push_back({entry_name(e), e.bytes, e.inodes, e.last_use, in_use(e, jobs, records, settings), true,
                         e.measured, e.recorded});
        tier_facts.used_bytes += e.bytes;
        tier_facts.used_inodes += e.inodes;
        any_unmeasured = any_unmeasured || !e.measured;
    }
    policy::cap_at_file_system_use(tier_facts, space);
    policy::count_unmeasured(tier_facts, space, any_unmeasured);
    const policy::EvictionPlan plan = policy::plan_eviction(facts, tier_facts, tier.watermarks);
    // Which entries the plan names, looked up at once under the lock (not a
    // search of the plan per entry: entries times evictions).
    std::vector<bool> planned(found.entries.size(), false), ask_file_system(found.entries.size(), false);
    for (std::size_t k = 0; k < plan.evict.size(); ++k) {
        planned[plan.evict[k]] = true;
        ask_file_system[plan.evict[k]] = plan.ask_file_system[k];
    }
    std::optional<CacheLock> lock;
    if (!options.dry_run) {
        if (!take_cache_lock(lock, tier, config, options, outcome))
            return outcome;
        add_root_records(found.entries, tier, state_dir, options.node);
        records = use_records(config, options);
    }
    // A prolog evicted since gc measured: the sizes no longer hold, and the
    // next run decides (a prolog makes room for its own job anyway).
    const bool measured_stale = !options.dry_run && eviction_generation(state_dir, options.node) != generation;
    // As long under the lock as a prolog may be, no longer: a prolog
    // waiting for it outlasts that (policies/cache_budget).
    const Deadline deadline(policy::cache_budget(config.site.prolog_epilog_timeout).under_lock);
    std::vector<bool> evicted(found.entries.size(), false);
    for (std::size_t i = 0; i < found.entries.size(); ++i) {
        const NodeCacheEntry& e = found.entries[i];
        policy::GcFacts f;
        f.kind = policy::GcKind::CacheEntry;
        f.in_use = in_use(e, jobs, records, settings);  // the uses read again under the lock
        f.over_watermark = planned[i];
        f.idle = e.last_use ? jobs.asked_at - e.last_use : 0;
        f.unfinished = !e.ready;
        f.moved_aside = e.aside;
        f.measured = facts[i].size_known();  // at its recorded size counts as measured
        f.owner_busy = owner_busy(e, jobs, records, settings);
        f.age = jobs.asked_at - e.changed;
        const policy::Verdict verdict = policy::gc_may_remove(f, settings);
        const std::string what = "cache entry " + entry_name(e) + " (tier " + quoted(tier.name) + ", " +
                                 (e.measured   ? format_size(e.bytes)
                                  : e.recorded ? "at least " + format_size(e.bytes)
                                               : std::string("size unknown")) +
                                 ")";
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
        if (ask_file_system[i] && !file_system_over_low(tier, tier_facts)) {
            ++outcome.kept;
            outcome.out.push_back("keep " + what + ": the tier's file system is below its low watermark now");
            continue;
        }
        const double left = deadline.left();
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
        evicted[i] = true;
        ++outcome.removed;
        outcome.out.push_back("removed " + what + ": " + verdict.reason);
    }
    add_features(config, tier, found.entries, evicted, !measured_stale, step, outcome);
    return outcome;
}

}  // namespace dlstage
