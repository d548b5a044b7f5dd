#include "stager/plan/split_share.hpp"

#include <algorithm>
#include <sstream>
#include <toml++/toml.h>

#include "lib/size.hpp"
#include "policies/split_placement.hpp"

namespace dlstage::stager {

SplitLayout place_plan(const Plan& plan, std::size_t nodes)
{
    SplitLayout split;
    split.nodes = std::max<std::size_t>(nodes, 1);
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        if (plan.entries.type(i) != EntryType::Dir) {
            split.part_entry.push_back(i);
            split.part_bytes.push_back(plan.entries.file_size(i));
        }
    split.node_of = policy::place_shards(split.part_bytes, split.nodes);
    split.share_bytes = policy::node_shares(split.part_bytes, split.node_of, split.nodes);
    split.share_files.assign(split.nodes, 0);
    for (const std::size_t node : split.node_of)
        ++split.share_files[node];
    return split;
}

SplitLayout place_for(const StageItem& item, const Plan& plan, std::size_t nodes)
{
    if (plan.single_file)
        policy::require(policy::split_possible(item.dataset, item.tier, Format::File));
    return place_plan(plan, nodes);
}

policy::SplitFacts split_facts_here(const StageItem& item, const Plan& plan, const TierSpace& space,
                                    std::uint64_t bytes_before, bool walk_goes_on)
{
    policy::SplitFacts split;
    split.dataset = item.dataset.name;
    split.asked_as = item.dataset.requested_as();
    split.tier = item.tier.name;
    split.total = bytes_before + plan.total_bytes();
    split.total_so_far = walk_goes_on;
    if (plan.format != Format::Dir && !walk_goes_on)
        split.shard_sizes = place_plan(plan, 1).part_bytes;
    split.room = item.tier.max_bytes.resolve(space.total_bytes);
    if (space.free_bytes && (!split.room || *space.free_bytes < *split.room))
        split.room = space.free_bytes;
    split.split_asked = item.split;
    return split;
}

Plan share_of(const Plan& plan, const SplitLayout& split, std::size_t node)
{
    std::vector<char> wanted(plan.entries.size(), 0);
    for (std::size_t part = 0; part < split.part_entry.size(); ++part)
        wanted[split.part_entry[part]] = split.node_of[part] == node ? 1 : 0;
    return plan_part(plan, wanted);
}

toml::table split_index(const StageItem& item, const Plan& plan, const SplitLayout& split, std::size_t node,
                        const std::vector<std::string>& hosts)
{
    const auto count = [](std::uint64_t n) { return static_cast<std::int64_t>(n); };
    toml::array shares;
    for (std::size_t n = 0; n < split.nodes; ++n)
        shares.push_back(toml::table{{"node", count(n)},
                                     {"host", n < hosts.size() ? hosts[n] : std::string()},
                                     {"bytes", count(split.share_bytes[n])},
                                     {"files", count(split.share_files[n])}});
    toml::table index{{"dataset", item.dataset.name},
                      {"tier", item.tier.name},
                      {"placement", "split"},
                      {"nodes", count(split.nodes)},
                      {"node", count(node)},
                      {"bytes", count(split.share_bytes[node])},
                      {"files", count(split.share_files[node])},
                      {"shares", std::move(shares)}};
    if (comes_in_parts(plan.format)) {  // parts, not a tree's files
        toml::array parts;
        for (std::size_t part = 0; part < split.part_entry.size(); ++part)
            parts.push_back(toml::table{{"path", std::string(plan.entries.path(split.part_entry[part]))},
                                        {"node", count(split.node_of[part])},
                                        {"bytes", count(split.part_bytes[part])}});
        index.insert("parts", std::move(parts));
    }
    return index;
}

std::string split_index_json(const StageItem& item, const Plan& plan, const SplitLayout& split, std::size_t node,
                             const std::vector<std::string>& hosts)
{
    std::ostringstream text;
    text << toml::json_formatter{split_index(item, plan, split, node, hosts)} << "\n";
    return text.str();
}

std::string shares_text(const SplitLayout& split)
{
    const auto [low, high] = std::minmax_element(split.share_bytes.begin(), split.share_bytes.end());
    const std::string least = format_size(*low), most = format_size(*high);
    return "split over " + std::to_string(split.nodes) + (split.nodes == 1 ? " node, " : " nodes, ") +
           (least == most ? most : least + " to " + most) + " each";
}

}  // namespace dlstage::stager
