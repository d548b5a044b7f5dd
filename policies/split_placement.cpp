#include "policies/split_placement.hpp"

#include <algorithm>
#include <numeric>

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

Verdict admit_placement(const SplitFacts& facts)
{
    if (!facts.room || facts.shard_sizes.empty())
        return Verdict::allow();
    const std::uint64_t room = *facts.room;
    const std::uint64_t total = std::accumulate(facts.shard_sizes.begin(), facts.shard_sizes.end(), std::uint64_t{0});
    const std::string what = "dataset " + quoted(facts.dataset);
    const std::string where = "tier " + quoted(facts.tier);
    const std::optional<std::size_t> fewest = fewest_nodes_split(facts.shard_sizes, room);
    if (!fewest) {
        const std::uint64_t largest = *std::max_element(facts.shard_sizes.begin(), facts.shard_sizes.end());
        return Verdict::refuse(what + " has a part of " + format_size(largest) + " but " + where + " takes " +
                               format_size(room) + " per node: it cannot be staged there, not even split; " +
                               "choose another tier or cut the dataset into smaller shards");
    }
    const std::string on_nodes = "on " + std::to_string(*fewest) + " or more nodes";
    if (facts.split_asked) {
        if (facts.nodes > 0 && fullest(facts.shard_sizes, facts.nodes) <= room)
            return Verdict::allow();
        return Verdict::refuse(what + " (" + format_size(total) + ") split over " + std::to_string(facts.nodes) +
                               (facts.nodes == 1 ? " node" : " nodes") + " needs more than the " + format_size(room) +
                               " " + where + " takes per node; it fits split " + on_nodes + ": ask for -N " +
                               std::to_string(*fewest) + " or more");
    }
    if (total <= room)
        return Verdict::allow();
    return Verdict::refuse(what + " needs " + format_size(total) + " but " + where + " takes " + format_size(room) +
                           " per node; it would fit split " + on_nodes + ": --stage-data=" + facts.dataset + ":" +
                           facts.tier + ":split with -N " + std::to_string(*fewest) + " or more");
}

}  // namespace dlstage::policy
