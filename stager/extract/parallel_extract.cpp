#include "stager/extract/parallel_extract.hpp"

#include <algorithm>
#include <unordered_set>

#include "lib/sys/parallel.hpp"

namespace dlstage::stager {

namespace {
void add(ExtractStats& total, const ExtractStats& one)
{
    total.entries += one.entries;
    total.bytes += one.bytes;
    total.stripped += one.stripped;
}

bool overlap(const std::vector<ShardOutcome>& outcomes)
{
    std::unordered_set<std::string> seen;
    for (const ShardOutcome& outcome : outcomes)
        for (const std::string& name : outcome.names)
            if (!seen.insert(name).second)
                return true;
    return false;
}

ExtractStats extract_in_order(const std::vector<std::string>& shards, const std::string& dest, ExtractBudget& budget)
{
    ExtractStats total;
    for (const std::string& shard : shards)
        add(total, extract_tar(shard, dest, nullptr, &budget));
    return total;
}
}  // namespace

ShardsResult extract_shards(const std::vector<std::string>& shards, const std::string& dest, unsigned threads,
                            const std::function<void()>& clear_dest, ExtractBudget& budget)
{
    ShardsResult result;
    if (shards.size() < 2 || threads < 2) {
        result.stats = extract_in_order(shards, dest, budget);
        return result;
    }
    std::vector<ShardOutcome> outcomes(shards.size());
    std::vector<ExtractStats> stats(shards.size());
    for_each_index(shards.size(), threads,
                   [&](std::size_t i) { stats[i] = extract_tar(shards[i], dest, &outcomes[i], &budget); });

    if (overlap(outcomes)) {
        clear_dest();
        budget.restart();
        result.stats = extract_in_order(shards, dest, budget);
        result.sequential_fallback = true;
        return result;
    }
    // In shard order, as tar -x would leave a directory that several shards
    // describe; only now, when nothing is written into them any more.
    for (std::size_t i = 0; i < shards.size(); ++i) {
        restore_directory_times(dest, outcomes[i]);
        add(result.stats, stats[i]);
    }
    return result;
}

}  // namespace dlstage::stager
