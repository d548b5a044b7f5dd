#include "tier/cache_features.hpp"

#include <algorithm>
#include <cmath>
#include <fcntl.h>
#include <sys/stat.h>

#include "job/job_layout.hpp"
#include "job/slurm_nodes.hpp"
#include "lib/contract.hpp"
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
    if (!config.find_dataset(parts.dataset))
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

std::string change_node_features(const Config& config, const std::string& node, const std::set<std::string>& named,
                                 policy::FeatureChange change, double seconds)
{
    if (!config.locality.node_features)
        return "";
    const std::string& state_dir = config.site.state_dir;
    try {
        const CacheLock lock(state_dir, node, seconds / 3, kFeaturesLock);
        const std::set<std::string> recorded = recorded_node_features(state_dir, node);
        // Only gc's look at them all asks whatever root last set: it is
        // what repairs a slurmctld that lost them.
        if (change != policy::FeatureChange::Replace && policy::features_after(recorded, named, change) == recorded)
            return "";
        const int timeout = std::max(1, static_cast<int>(std::floor(seconds / 3)));
        std::string problem;
        const auto now = ask_node_features(node, timeout, problem);
        if (!now)
            return "node features not changed: " + problem;
        const std::set<std::string> ours = policy::dlstage_features_of(now->available, config.locality);
        // A node that may not take jobs (drained, down) attracts none: a
        // job preferring it would wait for it (release_preferring_jobs).
        const std::set<std::string> after = policy::slurm_node_may_take_jobs(now->state)
                                                ? policy::features_after(ours, named, change)
                                                : std::set<std::string>{};
        if (after != ours || policy::dlstage_features_of(now->active, config.locality) != after) {
            const NodeFeatures wanted{policy::node_features_with(now->available, after, config.locality),
                                      policy::node_features_with(now->active, after, config.locality), now->state};
            if (problem = set_node_features(node, wanted, timeout); !problem.empty())
                return "node features not changed: " + problem;
        }
        record_node_features(state_dir, node, after);
        std::set<std::string> gone;
        for (const std::string& feature : ours)
            if (!after.count(feature))
                gone.insert(feature);
        if (!gone.empty())
            if (const ReleasedJobs released = release_preferring_jobs(config, gone, seconds / 3);
                !released.problem.empty())
                return "pending jobs preferring " + node + " not released: " + released.problem;
    } catch (const Error& e) {
        return std::string("node features not changed: ") + e.what();
    }
    return "";
}

ReleasedJobs release_preferring_jobs(const Config& config, const std::set<std::string>& gone, double seconds)
{
    ReleasedJobs out;
    const int timeout = std::max(1, static_cast<int>(std::floor(seconds)));
    const auto jobs = ask_pending_preferences(timeout, out.problem);
    if (!jobs)
        return out;
    for (const PendingPreference& job : *jobs) {
        if (!policy::prefer_is_dlstages(config.locality, job.prefer))
            continue;
        bool names_gone = false;
        for (const std::string& feature : split(job.prefer, '&'))
            names_gone = names_gone || gone.count(feature) > 0;
        if (!names_gone && !policy::slurm_reason_is_unmet_features(job.reason))
            continue;
        if (const std::string problem = clear_job_prefer(job.job, timeout); !problem.empty())
            out.problem = problem;
        else
            ++out.released;
    }
    return out;
}

}  // namespace dlstage
