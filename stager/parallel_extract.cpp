#include "stager/parallel_extract.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_set>

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
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::exception_ptr first_error;
    const auto work = [&] {
        for (std::size_t i; (i = next++) < shards.size();) {
            try {
                stats[i] = extract_tar(shards[i], dest, &outcomes[i], &budget);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex);
                if (!first_error)
                    first_error = std::current_exception();
                next = shards.size();  // stop handing out shards
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::min<std::size_t>(threads, shards.size()); ++t)
        pool.emplace_back(work);
    for (auto& t : pool)
        t.join();
    if (first_error)
        std::rethrow_exception(first_error);

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
