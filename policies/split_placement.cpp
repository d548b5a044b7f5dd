#include "policies/split_placement.hpp"

#include <algorithm>
#include <numeric>

#include "facts/dataset_format.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
std::vector<std::size_t> round_robin(std::size_t count, std::size_t nodes)
{
    std::vector<std::size_t> placement(count);
    for (std::size_t i = 0; i < count; ++i)
        placement[i] = i % nodes;
    return placement;
}

// Largest first, each to the node with the fewest bytes so far: when the
// fullest node took its last shard it was the emptiest, so it ends at most
// that shard above any other.
std::vector<std::size_t> largest_first(const std::vector<std::uint64_t>& sizes, std::size_t nodes)
{
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
    std::vector<std::uint64_t> held(nodes, 0);
    std::vector<std::size_t> placement(sizes.size());
    for (const std::size_t shard : order) {
        const auto emptiest = static_cast<std::size_t>(std::min_element(held.begin(), held.end()) - held.begin());
        placement[shard] = emptiest;
        held[emptiest] += sizes[shard];
    }
    return placement;
}

bool balanced_within(const std::vector<std::uint64_t>& shares, std::uint64_t most)
{
    const auto [low, high] = std::minmax_element(shares.begin(), shares.end());
    return *high - *low <= most;
}

std::uint64_t fullest(const std::vector<std::uint64_t>& sizes, std::size_t nodes)
{
    const std::vector<std::uint64_t> shares = node_shares(sizes, place_shards(sizes, nodes), nodes);
    return *std::max_element(shares.begin(), shares.end());
}
}  // namespace

Verdict split_possible(const Dataset& dataset, const Tier& tier, Format format)
{
    const std::string what = "dataset " + quoted(dataset.name);
    if (tier.scope == Scope::Shared)
        return Verdict::refuse(what + " cannot be split in tier " + quoted(tier.name) +
                               ": a shared tier holds one copy every node reads; split it into a node tier, or "
                               "stage it whole");
    if (dataset.mode == Mode::Mount)
        return Verdict::refuse(what + " has mode = \"mount\": an image is mounted whole on each node, so it "
                                      "cannot be split; stage it whole, or use mode = \"extract\"");
    const bool one_file = format == Format::File ||
                          (format != Format::Dir && format != Format::Auto && !is_part_glob(dataset.source, format));
    if (one_file)
        return Verdict::refuse(what + " is one file (" + dataset.source +
                               "): it cannot be split; stage it whole, or pack it into tar shards with "
                               "'dlstage pack --format tar'");
    return Verdict::allow();
}

bool placed_split(const std::optional<Placement>& asked, const Dataset& dataset, const Tier& tier)
{
    if (asked)
        return *asked == Placement::Split;
    if (tier.scope == Scope::Shared || dataset.mode == Mode::Mount)
        return false;
    if (dataset.placement == Placement::Split)
        return true;
    if (tier.placement != Placement::Split)
        return false;
    const Format known = dataset.known_format();
    return known == Format::Dir || is_part_glob(dataset.source, known);
}

std::vector<std::uint64_t> node_shares(const std::vector<std::uint64_t>& sizes,
                                       const std::vector<std::size_t>& placement, std::size_t nodes)
{
    std::vector<std::uint64_t> shares(nodes, 0);
    for (std::size_t i = 0; i < sizes.size(); ++i)
        shares[placement[i]] += sizes[i];
    return shares;
}

std::vector<std::size_t> place_shards(const std::vector<std::uint64_t>& sizes, std::size_t nodes)
{
    std::vector<std::size_t> placement = round_robin(sizes.size(), nodes);
    if (sizes.empty())
        return placement;
    const std::uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    if (balanced_within(node_shares(sizes, placement, nodes), largest))
        return placement;
    return largest_first(sizes, nodes);
}

std::optional<std::size_t> fewest_nodes_split(const std::vector<std::uint64_t>& sizes, std::uint64_t room)
{
    if (sizes.empty())
        return std::size_t{1};
    if (*std::max_element(sizes.begin(), sizes.end()) > room)
        return std::nullopt;
    const std::uint64_t total = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0});
    // No fewer than the bytes need; one shard a node at most always fits.
    std::size_t nodes = room == 0 ? 1 : static_cast<std::size_t>(std::max<std::uint64_t>(1, (total + room - 1) / room));
    for (; nodes < sizes.size() && fullest(sizes, nodes) > room; ++nodes) {
    }
    return std::min(nodes, sizes.size());
}

std::optional<std::uint64_t> largest_share(const SplitFacts& facts, std::size_t nodes)
{
    if (nodes == 0)
        return std::nullopt;
    if (!facts.shard_sizes.empty())
        return fullest(facts.shard_sizes, nodes);
    if (facts.total)
        return (*facts.total + nodes - 1) / nodes;
    return std::nullopt;
}

namespace {
// The fewest nodes the split fits on, and the largest part (nothing: no
// number of nodes does, the part alone being larger than room).
std::optional<std::size_t> fewest_nodes(const SplitFacts& facts, std::uint64_t room)
{
    if (!facts.shard_sizes.empty())
        return fewest_nodes_split(facts.shard_sizes, room);
    if (room == 0)
        return std::nullopt;
    return static_cast<std::size_t>(std::max<std::uint64_t>(1, (*facts.total + room - 1) / room));
}
}  // namespace

Verdict admit_placement(const SplitFacts& facts)
{
    if (!facts.room || (facts.shard_sizes.empty() && !facts.total))
        return Verdict::allow();
    const std::uint64_t room = *facts.room;
    const std::uint64_t total = facts.shard_sizes.empty() ? *facts.total
                                                          : std::accumulate(facts.shard_sizes.begin(),
                                                                            facts.shard_sizes.end(), std::uint64_t{0});
    const std::string what = "dataset " + quoted(facts.dataset);
    const std::string where = "tier " + quoted(facts.tier);
    const std::optional<std::size_t> fewest = fewest_nodes(facts, room);
    if (!fewest) {
        const std::uint64_t largest =
            facts.shard_sizes.empty() ? total : *std::max_element(facts.shard_sizes.begin(), facts.shard_sizes.end());
        return Verdict::refuse(what + " has a part of " + format_size(largest) + " but " + where + " takes " +
                               format_size(room) + " per node: it cannot be staged there, not even split; " +
                               "choose another tier or cut the dataset into smaller shards");
    }
    const std::string on_nodes = "on " + std::to_string(*fewest) + " or more nodes";
    if (facts.split_asked) {
        if (facts.nodes == 0 || largest_share(facts, facts.nodes) <= room)
            return Verdict::allow();
        return Verdict::refuse(what + " (" + format_size(total) + ") split over " + std::to_string(facts.nodes) +
                               (facts.nodes == 1 ? " node" : " nodes") + " needs more than the " + format_size(room) +
                               " " + where + " takes per node; it fits split " + on_nodes + ": ask for -N " +
                               std::to_string(*fewest) + " or more");
    }
    if (total <= room)
        return Verdict::allow();
    return Verdict::refuse(what + " needs " + format_size(total) + " but " + where + " takes " + format_size(room) +
                           " per node; " + split_advice(facts));
}

std::string split_advice(const SplitFacts& facts)
{
    if (!facts.room || (facts.shard_sizes.empty() && !facts.total))
        return {};
    const std::optional<std::size_t> fewest = fewest_nodes(facts, *facts.room);
    if (!fewest || *fewest < 2)
        return {};
    // A walk refused part-way knows only the least the tree needs: the
    // count it gives is the fewest nodes, not one sure to do.
    const std::string unsure = facts.total_so_far ? ", more if the rest of the tree (not walked yet) is large" : "";
    return "it would fit split on " + std::to_string(*fewest) + " or more nodes" + unsure +
           ": --stage-data=" + (facts.asked_as.empty() ? facts.dataset : facts.asked_as) + ":" + facts.tier +
           ":split with -N " + std::to_string(*fewest) + " or more";
}

Verdict with_split_advice(const Verdict& whole, const Dataset& dataset, const Tier& tier, Format format,
                          const SplitFacts& facts)
{
    const bool may_ask_split = !whole.allowed && !facts.split_asked && split_possible(dataset, tier, format).allowed;
    const std::string advice = may_ask_split ? split_advice(facts) : std::string();
    return advice.empty() ? whole : Verdict::refuse(whole.reason + "; " + advice);
}

Verdict split_shares_in_node_order(const std::vector<std::string>& node_of_rank,
                                   const std::optional<std::vector<std::string>>& job_nodes)
{
    const std::string advice = ": launch one rank per node in the job's node order, or stage it whole or to a "
                               "job-end tier";
    if (!job_nodes)
        return Verdict::refuse("its node cache shares cannot be kept: the job's node list (SLURM_JOB_NODELIST) is "
                               "not known here" +
                               advice);
    if (job_nodes->size() != node_of_rank.size())
        return Verdict::refuse("its node cache shares cannot be kept: " + std::to_string(node_of_rank.size()) +
                               " ranks for the job's " + std::to_string(job_nodes->size()) + " nodes" + advice);
    for (std::size_t rank = 0; rank < node_of_rank.size(); ++rank)
        if (node_of_rank[rank] != (*job_nodes)[rank]) {
            const auto at = std::find(job_nodes->begin(), job_nodes->end(), node_of_rank[rank]);
            const std::string place =
                at == job_nodes->end() ? "not one of the job's nodes"
                                       : "the job's node " + std::to_string(at - job_nodes->begin()) + " in its list";
            return Verdict::refuse("its node cache shares cannot be kept: rank " + std::to_string(rank) + " runs on " +
                                   node_of_rank[rank] + ", " + place +
                                   ", so its share would not be the one that "
                                   "node's prolog keeps from eviction" +
                                   advice);
        }
    return Verdict::allow("ranks in the job's node order");
}

}  // namespace dlstage::policy
