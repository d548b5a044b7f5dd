#include "status/node_view.hpp"

#include "lib/error.hpp"

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

}  // namespace dlstage
