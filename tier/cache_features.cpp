#include "tier/cache_features.hpp"

#include <algorithm>
#include <cmath>
#include <fcntl.h>
#include <iterator>
#include <map>
#include <optional>
#include <sys/stat.h>

#include "dataset/source_probe.hpp"
#include "job/copy_record.hpp"
#include "job/job_layout.hpp"
#include "job/slurm_nodes.hpp"
#include "lib/contract.hpp"
#include "lib/deadline.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "policies/slurm_states.hpp"
#include "tier/cache_records.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

std::string cache_entry_feature(const Config& config, uid_t uid, const std::string& entry)
{
    const CacheEntryParts parts = cache_entry_parts(entry);
    // A share no split makes (its index past its count, a count past any
    // job's) is a name a user made: no feature.
    if (!config.find_dataset(parts.dataset) || parts.shares > policy::kMostShares ||
        (parts.shares > 0 && parts.share >= parts.shares))
        return "";
    return policy::entry_feature(config.locality, {parts.dataset, uid, parts.shares});
}

std::set<std::string> whole_entry_features(const Config& config, const std::vector<NodeCacheEntry>& entries)
{
    std::set<std::string> features;
    for (const NodeCacheEntry& entry : entries) {
        if (!entry.ready || entry.aside || entry.unlisted || entry.dataset.empty())
            continue;
        if (const std::string feature = cache_entry_feature(config, entry.uid, entry.dataset); !feature.empty())
            features.insert(feature);
    }
    // Past the most a node keeps, the rest get none (the set's order: by
    // name).
    while (features.size() > policy::kMostFeaturesPerNode)
        features.erase(std::prev(features.end()));
    return features;
}

std::vector<std::string> whole_entries_of(const Tier& tier, const NodeCacheEntry& owner,
                                          const std::vector<std::string>& entries, double seconds)
{
    const std::string dir = cache_dir_of(tier, owner.user);
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        cache_detail::act_as(owner.uid, owner.gid);
        const OpenResult opened = open_job_dir(tier.path.root(), dir);
        if (!opened.problem.empty())
            return std::string();
        std::string whole;
        for (const std::string& entry : entries) {
            struct stat st {};
            const std::string ready = kReadyPrefix + entry + kRecordSuffix;
            if (::fstatat(opened.dir.get(), ready.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                whole += entry + "\n";
        }
        return whole;
    });
    std::vector<std::string> found;
    if (outcome.status != BoundedOutcome::Status::Done)
        return found;
    for (const std::string& entry : split(outcome.output, '\n'))
        if (std::find(entries.begin(), entries.end(), entry) != entries.end())
            found.push_back(entry);
    return found;
}

namespace {
// The look at one entry's source, as its owner (the child's side).
policy::EntrySourceLook look_at_source(const Config& config, const std::string& dir, const std::string& entry)
{
    policy::EntrySourceLook look;
    const Dataset* dataset = config.find_dataset(cache_entry_parts(entry).dataset);
    std::optional<CopyRecord> record;
    try {
        record = read_copy_record(dir + "/" + kReadyPrefix + entry + kRecordSuffix);
    } catch (const Error&) {
    }
    if (!dataset || !record)
        return look;
    look.record_read = true;
    look.same_source = record->ready.source == dataset->source;
    look.known_current = std::max(record->made, record->last_use);
    look.looked = dataset->reach != Reach::Mover;
    if (look.looked) {
        const SourceTimes times = source_times(*dataset, config.site.manifests());
        look.present = times.present;
        look.newest_ctime = times.newest_ctime;
        look.manifest_scanned = times.manifest_scanned;
    }
    return look;
}
}  // namespace

EntryAttraction attraction_of(const Config& config, const Tier& tier, const NodeCacheEntry& owner,
                              const std::vector<std::string>& entries, double seconds)
{
    const std::string dir = cache_dir_of(tier, owner.user);
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        cache_detail::act_as(owner.uid, owner.gid);
        if (!open_job_dir(tier.path.root(), dir).problem.empty())
            return std::string();
        std::string said = "told\n";
        for (const std::string& entry : entries)
            if (const policy::Verdict v = policy::entry_attracts(look_at_source(config, dir, entry)); !v.allowed)
                said += entry + "\t" + v.reason + "\n";
        return said;
    });
    EntryAttraction attraction;
    attraction.told = outcome.status == BoundedOutcome::Status::Done && starts_with(outcome.output, "told\n");
    std::map<std::string, std::string> refused;  // an entry the child did not name is kept as it was
    if (attraction.told)
        for (const std::string& line : split(outcome.output, '\n'))
            if (const auto tab = line.find('\t'); tab != std::string::npos)
                refused[line.substr(0, tab)] = line.substr(tab + 1);
    for (const std::string& entry : entries) {
        const auto why = refused.find(entry);
        if (why == refused.end())
            attraction.attracting.push_back(entry);
        else
            attraction.refused.emplace_back(entry, why->second);
    }
    return attraction;
}

namespace {
// A Slurm command's bound: what is left of the deadline, whole seconds,
// split between the commands still to come; none under a second.
std::optional<int> command_seconds(const Deadline& deadline, int commands_left)
{
    const double each = deadline.left() / commands_left;
    if (each < 1)
        return std::nullopt;
    return static_cast<int>(std::floor(each));
}

const char* const kNoTimeLeft = "node features not changed: no time left";
}  // namespace

std::string change_node_features(const Config& config, const std::string& node, const std::set<std::string>& named,
                                 policy::FeatureChange change, double seconds)
{
    if (!config.locality.node_features)
        return "";
    const std::string& state_dir = config.site.state_dir;
    const Deadline deadline(seconds);
    try {
        const CacheLock lock(state_dir, node, deadline.left() / 3, kFeaturesLock);
        const std::set<std::string> recorded = recorded_node_features(state_dir, node);
        // Only gc's look at them all asks whatever root last set: it is
        // what repairs a slurmctld that lost them.
        if (change != policy::FeatureChange::Replace && policy::features_after(recorded, named, change) == recorded)
            return "";
        std::string problem;
        const auto asking = command_seconds(deadline, 2);
        if (!asking)
            return kNoTimeLeft;
        const auto now = ask_node_features(node, *asking, problem);
        if (!now)
            return "node features not changed: " + problem;
        // A drained node keeps its features: one gone from under a job
        // Slurm already took with a preference for it refuses or holds the
        // job, and submit prefers no node that may not take jobs.
        const std::set<std::string> ours = policy::dlstage_features_of(now->available, config.locality);
        const std::set<std::string> after = policy::features_after(ours, named, change);
        if (after != ours || policy::dlstage_features_of(now->active, config.locality) != after) {
            const NodeFeatures wanted{policy::node_features_with(now->available, after, config.locality),
                                      policy::node_features_with(now->active, after, config.locality), now->state};
            const auto setting = command_seconds(deadline, 1);
            if (!setting)
                return kNoTimeLeft;
            if (problem = set_node_features(node, wanted, *setting); !problem.empty())
                return "node features not changed: " + problem;
        }
        record_node_features(state_dir, node, after);
    } catch (const Error& e) {
        return std::string("node features not changed: ") + e.what();
    }
    return "";
}

ReleasedJobs release_held_jobs(const Config& config, double seconds)
{
    ReleasedJobs out;
    const Deadline deadline(seconds);
    const auto asking = command_seconds(deadline, 2);
    if (!asking)
        return out;
    const auto jobs = ask_pending_preferences(*asking, out.problem);
    if (!jobs)
        return out;
    for (const PendingPreference& job : *jobs) {
        if (!policy::prefer_is_dlstages(config.locality, job.prefer) ||
            !policy::slurm_reason_is_unmet_features(job.reason))
            continue;
        const auto clearing = command_seconds(deadline, 1);
        if (!clearing) {
            out.problem = "no time left to release job " + job.job + " and those after it; the next gc does";
            break;
        }
        if (const std::string problem = clear_job_prefer(job.job, *clearing); !problem.empty())
            out.problem = problem;
        else
            ++out.released;
    }
    return out;
}

}  // namespace dlstage
