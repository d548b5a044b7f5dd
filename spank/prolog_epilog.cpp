#include "spank/prolog_epilog.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "config/stage_spec.hpp"
#include "job/job_identity.hpp"
#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/deadline.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/quick_stat.hpp"
#include "policies/admission.hpp"
#include "policies/cache_budget.hpp"
#include "policies/cache_eviction.hpp"
#include "policies/cleanup.hpp"
#include "policies/node_faults.hpp"
#include "policies/node_features.hpp"
#include "policies/overrides.hpp"
#include "spank/job_facts.hpp"
#include "spank/source_facts_env.hpp"
#include "tier/cache_entry.hpp"
#include "tier/cache_evict.hpp"
#include "tier/cache_features.hpp"
#include "tier/cache_measure.hpp"
#include "tier/cache_records.hpp"
#include "tier/safe_fs.hpp"
#include "tier/tier_measure.hpp"

namespace dlstage::spank {

namespace {
// What both prolog and epilog start from, gathered before their work runs
// in a child process (which must not talk to Slurm).
// This node's place among the job's nodes, in the order the stager's
// ranks take them, for a split dataset's share.
struct NodePlace {
    std::size_t nodes = 0, index = 0;
};

struct ScriptStart {
    std::string stage_data;
    JobFacts job;
    Config site;                                   // the site's configuration as the file says
    Config config;                                 // the job's: site with its [[overrides]] applied (set in the child)
    std::string facts;                             // what the submit side learnt of the sources (prolog)
    std::map<std::string, std::string> slurm_env;  // what slurmd says of the job: partition, account, user
    std::optional<NodePlace> place;                // from slurmd's node list; nothing when not known
};

// Where this node is in slurmd's SLURM_NODELIST (else SLURM_JOB_NODELIST),
// expanded once per prolog: the names a user puts in a cache directory are
// matched against what it gives, under the node cache's lock.
std::optional<NodePlace> node_place(const std::map<std::string, std::string>& slurm_env, const std::string& node)
{
    for (const char* name : {"SLURM_NODELIST", "SLURM_JOB_NODELIST"}) {
        const auto found = slurm_env.find(name);
        const auto hosts = found == slurm_env.end() ? std::nullopt : expand_host_list(found->second);
        if (!hosts)
            continue;
        const auto here = std::find(hosts->begin(), hosts->end(), node);
        if (here != hosts->end())
            return NodePlace{hosts->size(), static_cast<std::size_t>(here - hosts->begin())};
    }
    return std::nullopt;
}

// Nothing when the job asked for no data, or when the configuration cannot
// be used (logged): a broken or untrusted configuration is the admins' to
// fix, not the node's, so it never drains.
std::optional<ScriptStart> start_script(SpankApi& api, const PluginArgs& args)
{
    const auto stage_data = api.stage_data_option();
    if (!stage_data)
        return std::nullopt;
    ScriptStart start{*stage_data, job_facts(api), {}, {}, api.getenv(std::string(kPrologEnvPrefix) + kFactsVar), {},
                      {}};
    try {
        start.site = load_trusted_config(choose_config_path(args.config_path, false));
        start.config = start.site;  // until the child knows the job's overrides
        for (const char* name :
             {"SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", "SLURM_JOB_USER", "SLURM_NODELIST", "SLURM_JOB_NODELIST"})
            start.slurm_env[name] = api.getenv(name);
        start.place = node_place(start.slurm_env, start.job.node);
    } catch (const Error& e) {
        api.error("job " + start.job.job_id + " on " + start.job.node + ": " + e.what());
        return std::nullopt;
    }
    return start;
}

// Who, where and when, for the node record and the user's outcome record.
toml::table job_identity(const JobFacts& job)
{
    toml::table record{
        {"node", job.node},
        {"user", job.user},
        {"uid", static_cast<std::int64_t>(job.uid)},
        {"time", static_cast<std::int64_t>(std::time(nullptr))},
    };
    if (!job.array_job_id.empty() && !job.array_task_id.empty()) {
        record.insert("array_job_id", job.array_job_id);
        record.insert("array_task_id", job.array_task_id);
    }
    return record;
}

toml::table base_record(const JobFacts& job, const std::string& stage_data, const char* event)
{
    toml::table record = job_identity(job);
    record.insert("event", event);
    record.insert("job_id", job.job_id);
    record.insert("stage_data", stage_data);
    return record;
}

toml::array planned_datasets(const std::vector<StageItem>& items, const JobFacts& job)
{
    const TemplateValues values = job.values();
    toml::array datasets;
    for (const StageItem& item : items)
        datasets.push_back(toml::table{
            {"name", item.dataset.name},
            {"source", item.dataset.source},
            {"tier", item.tier.name},
            {"env", item.env_name},
            {"directory", tier_directory(item, values)},
        });
    return datasets;
}

// What the work in the child tells the parent: lines to log and the outcome.
struct Report {
    std::string status;
    std::string message;
    toml::array notes;   // logged as they are: things repaired on the way
    toml::array errors;  // logged as errors
    // The node features of the cache entries this script evicted
    // (tier/cache_features), for it to remove once out of the lock.
    std::set<std::string> evicted_features;

    std::string text() const
    {
        std::ostringstream out;
        out << toml::table{{"status", status}, {"message", message}, {"notes", notes}, {"errors", errors}};
        return out.str();
    }
};

// The outcome on this node where the job's user (`dlstage status`, the
// stager) can read it: root's file in the user's dir, 0644.
toml::table user_outcome(const JobFacts& job, const Report& report)
{
    toml::table outcome = job_identity(job);
    outcome.insert("status", report.status);
    outcome.insert("message", report.message);
    return outcome;
}

// A node fault: no job could stage here, so the node should get no more.
struct NodeFault : Error {
    using Error::Error;
};

// The state record of this node for this event, root's only (0600): it
// names users' paths.  Written through the trusted state_dir, never by path.
void write_node_record(const ScriptStart& start, const char* event, const toml::table& record, Report& report)
{
    const std::string& state_dir = start.config.site.state_dir;
    const std::string dir = job_state_dir(state_dir, start.job.job_id);
    const OpenResult opened = open_trusted_dir(state_dir, dir, true);
    try {
        if (!opened.problem.empty())
            throw Error(opened.problem);
        write_record_at(opened.dir.get(), dir, node_record_name(start.job.node, event), record, 0600);
    } catch (const Error& e) {
        report.errors.push_back("cannot write the state record: " + std::string(e.what()));
    }
}

// ---------------------------------------------------------------------------
// prolog

// The job's user may write progress records here (the rest of state_dir
// is root's).  state_dir and the levels to it are the admin's: refused,
// never moved, when untrusted.
Fd prepare_user_state_dir(const ScriptStart& start, Report& report)
{
    const std::string& state_dir = start.config.site.state_dir;
    PrepareResult result = prepare_job_dir(state_dir, job_user_dir(state_dir, start.job.job_id), start.job.uid,
                                           start.job.gid, Untrusted::Refuse);
    if (!result.ok())
        report.errors.push_back("no progress records: " + result.problem);
    return std::move(result.dir);
}

// Makes one job directory; its fd for the space check.
Fd prepare_tier_dir(const StageItem& item, const std::string& dir, const JobFacts& job, Report& report)
{
    PrepareResult result = prepare_job_dir(item.tier.path.root(), dir, job.uid, job.gid);
    for (const auto& repair : result.repairs)
        report.notes.push_back(repair);
    if (result.ok())
        return std::move(result.dir);
    const policy::FaultVerdict verdict =
        policy::blame_for_tier_error(result.at_tier_parent ? policy::TierPlace::Parent : policy::TierPlace::Inside,
                                     result.err);
    if (verdict.blame == policy::Blame::Node)
        throw NodeFault("tier " + quoted(item.tier.name) + " is broken on " + job.node + ": " + result.problem +
                        " (a node fault: " + verdict.reason + ")");
    throw Error(result.problem + (result.err ? " (" + verdict.reason + ")" : ""));
}

// Each job directory, and what the submit side learnt of each source
// against this node's tier.
void prepare_directories(const std::vector<StageItem>& items, const ScriptStart& start, Report& report)
{
    const auto facts = decode_facts(start.facts);
    std::set<std::string> done;
    for (const StageItem& item : items) {
        const std::string dir = tier_directory(item, start.job.values());
        if (!done.insert(dir).second)
            continue;
        const Fd fd = prepare_tier_dir(item, dir, start.job, report);
        const TierSpace space = measure_tier_space(fd.get(), dir);
        for (const StageItem& other : items) {
            const auto known = facts.find(other.dataset.name);
            if (known == facts.end() || tier_directory(other, start.job.values()) != dir)
                continue;
            const policy::Verdict verdict = policy::admit(other.dataset, other.tier, known->second, space);
            if (!verdict.allowed)
                throw Error(verdict.reason + " on " + start.job.node);
        }
    }
}

// ---------------------------------------------------------------------------
// node caches (cleanup = "cache"): the user's cache directory, root's record
// of the job's use, and room for what the job brings (tier/cache_entry.hpp)

bool is_cache(const Tier& tier)
{
    return tier.node_cache();
}

// The sizes of the job's datasets bound for `tier`, by dataset name.
using SizesByDataset = std::map<std::string, SourceFacts>;

// The node cache steps' one deadline (policies/cache_budget): each step
// gets its share of the prolog's time or what is left of the sum, whichever
// is less, so that all of them at their bounds end within the prolog's
// time, and one user's hung mount costs their own entries (left out),
// never another user's job or the node.
class CacheClock {
public:
    explicit CacheClock(const ScriptStart& start)
        : budget_(policy::cache_budget(start.config.site.prolog_epilog_timeout)), deadline_(budget_.total())
    {
    }

    const policy::CacheBudget& budget() const { return budget_; }

    // `share` seconds, or what is left of the whole, whichever is less.
    double within(double share) const { return deadline_.within(share); }

private:
    policy::CacheBudget budget_;
    Deadline deadline_;
};

// What the submitting user's sbatch said of the sources (the job's
// environment): theirs to forge, so it only decides whether the entries
// are worth measuring at all (a lie costs that look, nothing else).
SizesByDataset claimed_sizes(const ScriptStart& start)
{
    return decode_facts(start.facts);
}

// The entry this node's cache holds for item: its share's for a split
// dataset (job/job_layout), as the stager names it.
std::string entry_of(const StageItem& item, const ScriptStart& start)
{
    if (!item.split || !start.place)
        return item.dataset.name;
    return cache_entry_name(item, start.place->nodes, start.place->index);
}

// A split dataset's node holds about one share of it: its bytes and
// entries over the job's nodes, a share's shards not being known here.
// The stager checks its exact share.
SourceFacts about_one_share(SourceFacts facts, const ScriptStart& start)
{
    const std::size_t nodes = start.place ? start.place->nodes : 1;
    if (nodes > 1) {
        if (facts.bytes)
            *facts.bytes = (*facts.bytes + nodes - 1) / nodes;
        if (facts.files)
            *facts.files = (*facts.files + nodes - 1) / nodes;
    }
    return facts;
}

// The sizes root believes before evicting anything: each source probed by
// a child that became the job's user (tier/cache_entry.hpp), all of them
// within `seconds`, each with a fair share of what is left.  One that
// cannot be sized counts as bringing nothing, with a note.
SizesByDataset probed_sizes(const std::set<std::string>& tiers, const std::vector<StageItem>& items,
                            const ScriptStart& start, double seconds, Report& report)
{
    std::vector<const StageItem*> to_probe;
    std::set<std::string> names;
    for (const StageItem& item : items)
        if (tiers.count(item.tier.name) && names.insert(item.dataset.name).second)
            to_probe.push_back(&item);
    SizesByDataset sizes;
    FairShares shares(seconds, to_probe.size());
    for (const StageItem* probing : to_probe) {
        const StageItem& item = *probing;
        const double share = shares.next();
        const ProbedSource probed = share < 0.5
                                        ? ProbedSource{std::nullopt, std::nullopt, "no time was left to size it"}
                                        : probe_source_as(item.dataset, start.config.site.manifests(), start.job.user,
                                                          start.job.uid, start.job.gid, share);
        if (!probed.problem.empty())
            report.notes.push_back("node cache " + quoted(item.tier.name) + ": cannot size dataset " +
                                   quoted(item.dataset.name) + " as " + start.job.user + " (" + probed.problem +
                                   "); no room made for it");
        SourceFacts facts;
        facts.bytes = probed.bytes;
        facts.files = probed.files;
        sizes[item.dataset.name] = item.split ? about_one_share(facts, start) : facts;
    }
    return sizes;
}

// What the job brings to `tier`: the sizes given, less what this user's
// entries of those datasets already hold (a hit brings nothing).
policy::Incoming incoming_to(const Tier& tier, const std::vector<StageItem>& items, const ScriptStart& start,
                             const SizesByDataset& sizes, const std::vector<NodeCacheEntry>& entries)
{
    policy::Incoming incoming;
    for (const StageItem& item : items) {
        const auto known = sizes.find(item.dataset.name);
        if (item.tier.name != tier.name || known == sizes.end())
            continue;
        std::uint64_t bytes = known->second.bytes.value_or(0), inodes = known->second.files.value_or(0);
        const std::string entry_name = entry_of(item, start);
        for (const NodeCacheEntry& entry : entries)
            if (entry.uid == start.job.uid && entry.dataset == entry_name) {
                bytes = bytes > entry.bytes ? bytes - entry.bytes : 0;
                inodes = inodes > entry.inodes ? inodes - entry.inodes : 0;
            }
        incoming.bytes += bytes;
        incoming.inodes += inodes;
    }
    return incoming;
}

// What the jobs admitted on this node before this one still bring to
// `tier` (policies/cache_eviction still_coming), by root's records of their
// uses, beyond what their entries among `entries` hold now; with no
// entries measured, only uses recorded in the last `recent_seconds` count
// (a guess whether to measure: their stagings are most likely still going).
policy::Incoming still_coming_to(const Tier& tier, const std::vector<StageItem>& items, const ScriptStart& start,
                                 const std::vector<NodeCacheEntry>& entries,
                                 std::optional<std::int64_t> recent_seconds = std::nullopt)
{
    const auto key = [](uid_t uid, const std::string& dataset) { return std::to_string(uid) + "/" + dataset; };
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    std::vector<policy::PromisedUse> promised;
    for (const CachePromise& p : cache_promises(tier, start.config.site.state_dir, start.job.node))
        if (!recent_seconds || now - p.written <= *recent_seconds)
            promised.push_back({p.job, key(p.uid, p.dataset), p.bytes, p.inodes});
    std::map<std::string, policy::HeldEntry> held;
    for (const NodeCacheEntry& entry : entries)
        if (!entry.unlisted && !entry.aside)
            held[key(entry.uid, entry.dataset)] = {entry.bytes, entry.inodes, entry.measured && entry.ready};
    std::set<std::string> its_own;
    for (const StageItem& item : items)
        if (item.tier.name == tier.name)
            its_own.insert(key(start.job.uid, entry_of(item, start)));
    return policy::still_coming(promised, held, start.job.job_id, its_own);
}

// Whether `tier` may need room: its whole file system is over the high
// watermark with what the submitting user's sbatch claimed the job brings
// (theirs to forge: a lie costs a measurement, nothing else).  Below it,
// so is the cache, and nothing is measured; nor when the tier's root is
// not there yet (the first job on the node makes it, holding the lock).
bool may_need_room(const Tier& tier, const std::vector<StageItem>& items, const ScriptStart& start)
{
    if (!name_exists(tier.path.root()))
        return false;
    const TierSpace space = measure_tier_space(tier.path.root());
    const auto max_bytes = tier.max_bytes.resolve(space.total_bytes);
    policy::Incoming guess = incoming_to(tier, items, start, claimed_sizes(start), {});
    // And what jobs admitted here in the last quarter hour said they bring,
    // as if none of it were written yet: at worst a measurement more.
    guess += still_coming_to(tier, items, start, {}, 15 * 60);
    const auto used = [](const std::optional<std::uint64_t>& total, const std::optional<std::uint64_t>& free) {
        return total && free && *total >= *free ? *total - *free : 0;
    };
    const auto below_mark = [&](std::uint64_t in_use, std::uint64_t limit) {
        return static_cast<double>(in_use) <= tier.watermarks.high * static_cast<double>(limit);
    };
    const bool bytes_fine = !max_bytes ||
                            below_mark(used(space.total_bytes, space.free_bytes) + guess.bytes, *max_bytes);
    const bool inodes_fine = !tier.max_inodes ||
                             below_mark(used(space.total_inodes, space.free_inodes) + guess.inodes, *tier.max_inodes);
    return !bytes_fine || !inodes_fine;
}

// A cache tier that may need room, its entries as measured before the
// lock, and the node's eviction count then.
struct Measured {
    const Tier* tier = nullptr;
    std::uint64_t generation = 0;
    FoundCacheEntries found;
};

// Before the lock: the cache tiers the job uses that may need room, each
// tier's entries measured (every user's directory) within `seconds` in all.
std::vector<Measured> measure_before_lock(const std::map<std::string, const Tier*>& tiers,
                                          const std::vector<StageItem>& items, const ScriptStart& start, double seconds)
{
    std::vector<Measured> measured;
    for (const auto& [name, tier] : tiers)
        if (may_need_room(*tier, items, start))
            measured.push_back({tier, 0, {}});
    FairShares shares(seconds, measured.size());
    for (std::size_t i = 0; i < measured.size(); ++i) {
        const double share = shares.next();
        measured[i].generation = eviction_generation(start.config.site.state_dir, start.job.node);
        measured[i].found =
            find_cache_entries(*measured[i].tier, start.config.site.state_dir, start.job.node, share, share);
    }
    return measured;
}

// Under the node's cache lock, within `seconds`: room in one cache tier for
// what the job brings (least recently used entries no running job uses go,
// policies/cache_eviction).  The uses are read again (the lock is what
// makes them hold), and the entries measured again, in at most half the
// time, only if another prolog, epilog or gc evicted since they were.
// What is not evicted in time stays for the epilog or gc.  Throws Error
// when the job cannot fit even with every unused entry gone.
void evict_for_room(Measured& m, const std::vector<StageItem>& items, const ScriptStart& start,
                    const SizesByDataset& sizes, double seconds, Report& report)
{
    const Tier& tier = *m.tier;
    const std::string& state_dir = start.config.site.state_dir;
    const std::string& node = start.job.node;
    const Deadline deadline(seconds);
    FoundCacheEntries& found = m.found;
    if (eviction_generation(state_dir, node) != m.generation)
        found = find_cache_entries(tier, state_dir, node, seconds / 2, seconds / 2);
    else
        add_root_records(found.entries, tier, state_dir, node);
    // The file system as it is under the lock: another's evictions since
    // the first look must not count as bytes nobody measured.
    const TierSpace space_now = measure_tier_space(tier.path.root());
    for (const std::string& problem : found.problems)
        report.notes.push_back("node cache " + quoted(tier.name) + ": " + problem);
    std::vector<policy::CacheEntryFacts> facts;
    policy::CacheTierFacts tier_facts;
    tier_facts.max_bytes = tier.max_bytes.resolve(space_now.total_bytes);
    tier_facts.max_inodes = tier.max_inodes;
    tier_facts.own_file_system = has_own_file_system(tier.path.root());
    bool any_unmeasured = false;
    for (const NodeCacheEntry& entry : found.entries) {
        facts.push_back({entry_name(entry), entry.bytes, entry.inodes, entry.last_use, !entry.jobs.empty(),
                         entry.uid == start.job.uid, entry.measured, entry.recorded});
        tier_facts.used_bytes += entry.bytes;
        tier_facts.used_inodes += entry.inodes;
        any_unmeasured = any_unmeasured || !entry.measured;
    }
    policy::cap_at_file_system_use(tier_facts, space_now);
    policy::count_unmeasured(tier_facts, space_now, any_unmeasured);
    policy::Incoming incoming = incoming_to(tier, items, start, sizes, found.entries);
    incoming += still_coming_to(tier, items, start, found.entries);
    const policy::EvictionPlan plan = policy::plan_eviction(facts, tier_facts, tier.watermarks, incoming);
    for (std::size_t i = 0; i < plan.evict.size(); ++i) {
        const NodeCacheEntry& entry = found.entries[plan.evict[i]];
        const double time_left = deadline.left();
        if (time_left < 1) {
            report.notes.push_back("node cache " + quoted(tier.name) + ": no time left to evict " +
                                   std::to_string(plan.evict.size() - i) + " more entries; left for the epilog or gc");
            break;
        }
        if (plan.ask_file_system[i] &&
            !policy::over_low_by_file_system(tier_facts, measure_tier_space(tier.path.root()), tier.watermarks,
                                             incoming))
            break;  // what it gives back is unknown: enough went
        const std::string problem = evict_cache_entry(tier, entry, time_left);
        if (problem.empty()) {
            count_eviction(state_dir, node);
            if (!entry.aside && !entry.unlisted)
                if (const std::string feature = cache_entry_feature(start.config, entry.uid, entry.dataset);
                    !feature.empty())
                    report.evicted_features.insert(feature);
        }
        report.notes.push_back("node cache " + quoted(tier.name) + ": evicted " + entry_name(entry) + " (" +
                               plan.why[i] + ")" + (problem.empty() ? "" : ": " + problem));
    }
    if (!plan.fits.allowed)
        throw Error(plan.fits.reason + " on " + node);
}

// The cache tiers `items` use, by name.
std::map<std::string, const Tier*> cache_tiers(const std::vector<StageItem>& items)
{
    std::map<std::string, const Tier*> tiers;
    for (const StageItem& item : items)
        if (is_cache(item.tier))
            tiers[item.tier.name] = &item.tier;
    return tiers;
}

// The node cache's steps for a prolog (`items`: what the job brings) or an
// epilog (none), within `clock`'s one deadline: the tiers that may need
// room measured and the job's sources sized without the lock; then the
// lock: `first` (recording the job's use), then room made in each of those
// tiers, then, the job admitted to them all, `admitted` with what it brings
// (recorded for the prologs after it: never for a job refused, which may
// go on running); no lock when there is neither.  Throws Error when the
// lock stays held past its share (the job cannot use the cache without its
// use recorded) or the job cannot fit.
void settle_caches(const std::map<std::string, const Tier*>& tiers, const std::vector<StageItem>& items,
                   const ScriptStart& start, const CacheClock& clock, const std::function<void()>& first,
                   const std::function<void(const SizesByDataset&)>& admitted, Report& report)
{
    const policy::CacheBudget& budget = clock.budget();
    std::vector<Measured> measured = measure_before_lock(tiers, items, start, clock.within(budget.measure));
    if (measured.empty() && !first)
        return;
    // Every source the job brings to a cache sized, needing room or not:
    // its use records what it brings, for the prologs after it to count.
    std::set<std::string> cached;
    for (const auto& [name, tier] : tiers)
        cached.insert(name);
    const SizesByDataset sizes = items.empty() ? SizesByDataset{}
                                               : probed_sizes(cached, items, start, clock.within(budget.probe), report);
    const CacheLock lock(start.config.site.state_dir, start.job.node, clock.within(budget.lock_wait));
    FairShares shares(clock.within(budget.under_lock), measured.size());
    if (first)
        first();
    for (Measured& m : measured)
        evict_for_room(m, items, start, sizes, shares.next(), report);
    if (admitted)
        admitted(sizes);
}

// The job's uses of cache entries, each with what it brings when its
// source could be sized.
std::vector<CacheUse> cache_uses(const std::vector<StageItem>& items, const ScriptStart& start,
                                 const SizesByDataset& sizes)
{
    std::vector<CacheUse> uses;
    for (const StageItem& item : items) {
        if (!is_cache(item.tier))
            continue;
        CacheUse use{item.tier.name, start.job.user, start.job.uid, entry_of(item, start), {}, {}};
        if (const auto known = sizes.find(item.dataset.name); known != sizes.end()) {
            use.bytes = known->second.bytes;
            use.inodes = known->second.files;
        }
        uses.push_back(std::move(use));
    }
    return uses;
}

// dlstage's node features changed (tier/cache_features), within `seconds`;
// what is not done in time, gc does.  A problem is a note: locality is a
// preference, and the job does not depend on it.
void change_features(const ScriptStart& start, const std::set<std::string>& named, policy::FeatureChange change,
                     double seconds, Report& report)
{
    if (named.empty() || !start.config.locality.node_features)
        return;
    if (const std::string problem = change_node_features(start.config, start.job.node, named, change, seconds);
        !problem.empty())
        report.notes.push_back(problem + "; 'dlstage gc' sets them");
}

// The features of the job's entries on this node that are whole now, each
// looked at as the job's user.
std::set<std::string> whole_job_entries(const std::vector<StageItem>& items, const ScriptStart& start, double seconds)
{
    std::set<std::string> features;
    const NodeCacheEntry owner = entry_owned_by(start.job.user, start.job.uid, start.job.gid);
    const auto tiers = cache_tiers(items);
    FairShares shares(seconds, tiers.size());
    for (const auto& [name, tier] : tiers) {
        std::vector<std::string> entries;
        for (const StageItem& item : items)
            if (item.tier.name == name)
                entries.push_back(entry_of(item, start));
        for (const std::string& entry : whole_entries_of(*tier, owner, entries, shares.next()))
            if (const std::string feature = cache_entry_feature(start.config, start.job.uid, entry); !feature.empty())
                features.insert(feature);
    }
    return features;
}

// The prolog: the user's cache directory in each cache tier the job uses,
// root's record of the use, and room.  The use and the directories are
// made under the lock: an eviction renames aside a user's directory it
// could not list when no use of theirs is recorded (tier/cache_evict), and
// must not take one this job has just made and not yet recorded.
void prepare_caches(const std::vector<StageItem>& items, const ScriptStart& start, Report& report)
{
    const auto tiers = cache_tiers(items);
    if (tiers.empty())
        return;
    const std::string& state_dir = start.config.site.state_dir;
    const CacheClock clock(start);
    settle_caches(
        tiers, items, start, clock,
        [&] {
            record_cache_use(state_dir, start.job.node, start.job.job_id, cache_uses(items, start, {}));
            for (const auto& [name, tier] : tiers) {
                StageItem as_item;
                as_item.tier = *tier;
                prepare_tier_dir(as_item, cache_dir_of(*tier, start.job.user), start.job, report);
            }
        },
        [&](const SizesByDataset& sizes) {
            record_cache_use(state_dir, start.job.node, start.job.job_id, cache_uses(items, start, sizes));
        },
        report);
    change_features(start, report.evicted_features, policy::FeatureChange::Remove, clock.within(clock.budget().probe),
                    report);
}

// The epilog: the job uses its cache entries no more, and a tier it filled
// past its high watermark (a tree whose size the submit side could not
// know) goes back under it.
void release_caches(const ScriptStart& start, Report& report)
{
    // The use goes first, at once (a configuration changed since the job
    // began too, or it would pin its entries until gc); room is made after,
    // within what is left of the same deadline.
    const CacheClock clock(start);
    {
        const CacheLock lock(start.config.site.state_dir, start.job.node, clock.within(clock.budget().lock_wait));
        forget_cache_use(start.config.site.state_dir, start.job.node, start.job.job_id);
    }
    const std::vector<StageItem> items = resolve_stage_data(start.config, start.stage_data);
    settle_caches(cache_tiers(items), {}, start, clock, {}, {}, report);
    // The epilog probes no source: its node features take the probe's
    // share (policies/cache_budget), most of it for slurmctld's answers.
    if (!start.config.locality.node_features)
        return;
    const Deadline features(clock.within(clock.budget().probe));
    change_features(start, report.evicted_features, policy::FeatureChange::Remove, features.left() / 2, report);
    const std::set<std::string> whole = whole_job_entries(items, start, features.left() / 3);
    change_features(start, whole, policy::FeatureChange::Add, features.left(), report);
}

// Runs in the bounded child: everything that touches the file systems.
Report prolog_work(const ScriptStart& start)
{
    Report report;
    const JobFacts& job = start.job;
    toml::table record = base_record(job, start.stage_data, "prolog");
    const Fd user_dir = prepare_user_state_dir(start, report);
    try {
        const auto items = resolve_stage_data(start.config, start.stage_data);
        record.insert("datasets", planned_datasets(items, job));
        prepare_caches(items, start, report);
        prepare_directories(items, start, report);
        report.status = kReadyState;
    } catch (const NodeFault& e) {
        report.status = kBrokenState;
        report.message = e.what();
    } catch (const Error& e) {
        // The user's problem (or a configuration changed since submit):
        // recorded for the stager to report; the node stays in service.
        report.status = kFailedState;
        report.message = e.what();
    }
    record.insert_or_assign("status", report.status);
    if (!report.message.empty())
        record.insert_or_assign("message", report.message);
    write_node_record(start, "prolog", record, report);
    // The outcome where the job's user can read it: the stager reports it.
    if (user_dir.valid()) {
        try {
            toml::table outcome = user_outcome(job, report);
            if (const toml::array* datasets = record["datasets"].as_array())
                outcome.insert("datasets", *datasets);
            write_record_at(user_dir.get(), job_user_dir(start.config.site.state_dir, job.job_id),
                            prolog_outcome_name(job.node), outcome, 0644);
        } catch (const Error& e) {
            report.errors.push_back(e.what());
        }
    }
    return report;
}

// ---------------------------------------------------------------------------
// epilog

Report epilog_work(const ScriptStart& start)
{
    Report report;
    const JobFacts& job = start.job;
    toml::table record = base_record(job, start.stage_data, "epilog");
    toml::array problems;
    std::uint64_t removed = 0;
    std::int64_t unmounted = 0;
    const auto detach = [&](const std::string& root, const std::string& dir) {
        const DetachResult detached = detach_mounts_within(root, dir);
        unmounted += detached.detached;
        for (const std::string& problem : detached.problems)
            problems.push_back(problem);
    };
    try {
        const auto items = resolve_stage_data(start.config, start.stage_data);
        // Mounts first (policies/cleanup.hpp).
        for (const StageItem& item : items)
            if (policy::cleanup_at_job_end(item.tier.cleanup, item.dataset.mode).detach_dataset_mount)
                detach(item.tier.path.root(), dataset_layout(item, job.values()).dataset_dir);
        std::set<std::string> done;
        for (const StageItem& item : items) {
            const std::string dir = tier_directory(item, job.values());
            if (!policy::cleanup_at_job_end(item.tier.cleanup, item.dataset.mode).remove_job_dir ||
                !done.insert(dir).second)
                continue;
            detach(item.tier.path.root(), dir);
            // As the job's user below the job directory: root never removes
            // what the user could not (another user's data moved in).
            // A shared tier's job directory: every node's epilog runs now,
            // and the one whose rename claims it removes it.
            const Owner owner{job.uid, job.gid};
            const RemoveResult result =
                item.tier.shared() ? remove_tree_within_once(item.tier.path.root(), dir, owner,
                                                             std::string(base_name(dir)) + ".removing-" + job.node)
                                   : remove_tree_within(item.tier.path.root(), dir, owner);
            removed += result.removed;
            for (const std::string& problem : result.problems)
                problems.push_back(problem);
        }
    } catch (const Error& e) {
        problems.push_back(std::string(e.what()));
    }
    try {
        release_caches(start, report);
    } catch (const Error& e) {
        problems.push_back(std::string(e.what()));
    }
    for (const auto& problem : problems)
        report.errors.push_back("cleanup: " + problem.value_or(std::string()));
    report.status = problems.empty() ? kCleanedState : "incomplete";
    record.insert("status", report.status);
    record.insert("removed", static_cast<std::int64_t>(removed));
    if (unmounted > 0)
        record.insert("unmounted", unmounted);
    record.insert("problems", problems);
    write_node_record(start, "epilog", record, report);
    // Where the job's user sees it too (`dlstage status`: cleaned).  No
    // user dir (the prolog could not make it) is nothing to report.
    try {
        write_user_outcome(start.config.site.state_dir, job.job_id, epilog_outcome_name(job.node),
                           user_outcome(job, report));
    } catch (const Error&) {
    }
    return report;
}

// ---------------------------------------------------------------------------

// The record of work that did not finish, so that status and gc know of
// it; written in a child of its own, briefly bounded: it is the state_dir
// that may be what hangs.
void record_unfinished(SpankApi& api, const ScriptStart& start, const char* what, const std::string& problem)
{
    const BoundedOutcome written = run_bounded(5, [&] {
        Report report;
        toml::table record = base_record(start.job, start.stage_data, what);
        record.insert("status", "unfinished");
        record.insert("message", "the " + std::string(what) + " " + problem);
        write_node_record(start, what, record, report);
        return report.errors.empty() ? std::string() : report.errors.front().value_or(std::string());
    });
    if (written.status != BoundedOutcome::Status::Done || !written.output.empty())
        api.error("job " + start.job.job_id + " on " + start.job.node + ": no record of the unfinished " + what + ": " +
                  (written.output.empty() ? written.problem : written.output));
}

// The tiers as this job gets them (policies/overrides), from what slurmd
// says of the job: partition and account from its credential, the groups
// of its user from NSS.  In the bounded child: a hung LDAP or sssd must
// end with the time limit, not drain the node.
Config job_config(const ScriptStart& start)
{
    const EnvLookup slurmd_env = [&](const std::string& name) {
        const auto it = start.slurm_env.find(name);
        return it == start.slurm_env.end() ? std::string() : it->second;
    };
    return policy::config_for_job(start.site,
                                  identity_from_slurm(slurmd_env, start.job.user, start.site.matches_groups()));
}

// Runs work in a child bounded by the site's time limit, logs what it
// reports, and returns its status ("" if it did not finish).
std::string run_work(SpankApi& api, const ScriptStart& start, const char* what, Report (*work)(const ScriptStart&))
{
    const std::string who = "job " + start.job.job_id + " on " + start.job.node + ": ";
    const BoundedOutcome outcome = run_bounded(start.site.site.prolog_epilog_timeout, [&] {
        ScriptStart in_child = start;
        try {
            in_child.config = job_config(start);
        } catch (const Error& e) {
            Report report;
            report.status = kFailedState;
            report.message = std::string("the job's configuration: ") + e.what();
            return report.text();
        }
        return work(in_child).text();
    });
    if (outcome.status != BoundedOutcome::Status::Done) {
        api.error(who + "the " + what + " " + outcome.problem + " (a hung mount or file system?); what it left " +
                  "undone stays on the node for 'dlstage gc'; the node stays in service");
        record_unfinished(api, start, what, outcome.problem);
        return "";
    }
    toml::table report;
    try {
        report = parse_record(outcome.output, what);
    } catch (const Error& e) {
        api.error(who + "the " + what + " sent an unreadable report: " + e.what());
        return "";
    }
    for (const char* list : {"notes", "errors"})
        if (const toml::array* lines = report[list].as_array())
            for (const auto& line : *lines)
                api.error(who + line.value_or(std::string()));
    const std::string status = report["status"].value_or(std::string());
    const std::string message = report["message"].value_or(std::string());
    if (!message.empty())
        api.error(status == kBrokenState ? message : who + message);
    return status;
}
}  // namespace

int job_prolog(SpankApi& api, const PluginArgs& args)
{
    const auto start = start_script(api, args);
    if (!start)
        return 0;
    const std::string status = run_work(api, *start, "prolog", prolog_work);
    if (status == kReadyState)
        api.info("job " + start->job.job_id + " on " + start->job.node + ": stage-data=" + start->stage_data +
                 " prepared");
    return status == kBrokenState ? -1 : 0;
}

int job_epilog(SpankApi& api, const PluginArgs& args)
{
    const auto start = start_script(api, args);
    if (start)
        run_work(api, *start, "epilog", epilog_work);
    return 0;
}

}  // namespace dlstage::spank
