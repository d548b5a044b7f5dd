#include "status/node_view.hpp"

#include <pwd.h>

#include "job/slurm_nodes.hpp"
#include "lib/error.hpp"
#include "policies/node_features.hpp"

namespace dlstage {

TierView look_at_tier(const Tier& tier, const std::string& state_dir, const std::string& node)
{
    TierView view;
    view.tier = &tier;
    const std::string& root = tier.path.root();
    try {
        TierContents contents = tier_contents(root);
        if (!contents.exists)
            view.problem = root + " does not exist (yet: the first job's prolog makes it)";
        view.entries = std::move(contents.entries);
        view.space = contents.space;
        view.byte_limit = tier.max_bytes.is_set() ? tier.max_bytes.resolve(view.space.total_bytes) : std::nullopt;
        view.cache = cache_entries(tier, state_dir, node);
    } catch (const Error& e) {
        view.problem = e.what();
    }
    return view;
}

namespace {
// How long status waits for slurmctld's word of a node.
constexpr int kScontrolSeconds = 10;

std::string user_of(unsigned long uid)
{
    const struct passwd* pw = ::getpwuid(static_cast<uid_t>(uid));
    return pw ? pw->pw_name : std::to_string(uid);
}
}  // namespace

RemoteNodeView look_at_node_features(const Config& config, const std::string& node)
{
    RemoteNodeView view;
    const auto features = ask_node_features(node, kScontrolSeconds, view.problem);
    if (!features)
        return view;
    for (const std::string& feature : features->active) {
        const auto read = policy::entry_of_feature(config.locality, feature);
        if (!read)
            continue;
        view.cached.push_back(
            {read->entry.dataset + (read->cut ? "..." : ""), user_of(read->entry.uid), read->entry.shares, feature});
    }
    return view;
}

}  // namespace dlstage
