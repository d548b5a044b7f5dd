#include "policies/cache_eviction.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
// Usage as the tier would stand with what comes in, less what is evicted.
struct Usage {
    std::uint64_t bytes = 0;
    std::uint64_t inodes = 0;
};

bool above(std::uint64_t used, const std::optional<std::uint64_t>& max, double share)
{
    return max && static_cast<double>(used) > share * static_cast<double>(*max);
}

bool above(const Usage& usage, const CacheTierFacts& tier, double share)
{
    return above(usage.bytes, tier.max_bytes, share) || above(usage.inodes, tier.max_inodes, share);
}

std::string percent_of(std::uint64_t used, std::uint64_t max)
{
    return std::to_string(static_cast<long long>(std::llround(100.0 * static_cast<double>(used) /
                                                              static_cast<double>(std::max<std::uint64_t>(max, 1))))) +
           "%";
}

// "93% of max_bytes (9.3 GiB of 10.0 GiB)", for the kind that is over.
std::string pressure(const Usage& usage, const CacheTierFacts& tier, double share)
{
    if (above(usage.bytes, tier.max_bytes, share))
        return percent_of(usage.bytes, *tier.max_bytes) + " of max_bytes (" + format_size(usage.bytes) + " of " +
               format_size(*tier.max_bytes) + ")";
    return percent_of(usage.inodes, *tier.max_inodes) + " of max_inodes (" + std::to_string(usage.inodes) + " of " +
           std::to_string(*tier.max_inodes) + ")";
}

// What the file system says is used of one kind (total less free), when
// it says both.
std::optional<std::uint64_t> in_use_by_file_system(const std::optional<std::uint64_t>& total,
                                                   const std::optional<std::uint64_t>& free)
{
    if (!total || !free || *total < *free)
        return std::nullopt;
    return *total - *free;
}

// "last used 2026-12-01", or "no recorded use" (an entry no job staged,
// whose use root never recorded), not the epoch's day.
std::string last_use_text(std::int64_t last_use)
{
    return last_use ? "last used " + day_text(last_use) : "no recorded use";
}

std::string share_text(double share)
{
    return std::to_string(static_cast<long long>(std::llround(share * 100))) + "%";
}

// "its file system holds 3.1 GiB no measured entry explains", for the kind
// that is over: a tier that shares its file system can hold far more than
// max_bytes that is no entry's, so no percentage of the tier.
std::string unexplained(const CacheTierFacts& tier, const Usage& seen, double share)
{
    if (above(seen.bytes, tier.max_bytes, share))
        return "its file system holds " + format_size(tier.unmeasured_bytes) +
               " no measured entry explains, which takes the tier past " + share_text(share) + " of max_bytes (" +
               format_size(*tier.max_bytes) + ")";
    return "its file system holds " + std::to_string(tier.unmeasured_inodes) +
           " inodes no measured entry explains, which takes the tier past " + share_text(share) + " of max_inodes (" +
           std::to_string(tier.max_inodes.value_or(0)) + ")";
}
}  // namespace

void cap_at_file_system_use(CacheTierFacts& tier, const TierSpace& space)
{
    const auto cap = [](std::uint64_t& used, const std::optional<std::uint64_t>& total,
                        const std::optional<std::uint64_t>& free) {
        if (const auto fs_used = in_use_by_file_system(total, free))
            used = std::min(used, *fs_used);
    };
    cap(tier.used_bytes, space.total_bytes, space.free_bytes);
    cap(tier.used_inodes, space.total_inodes, space.free_inodes);
}

void count_unmeasured(CacheTierFacts& tier, const TierSpace& space, bool any_unmeasured)
{
    const bool counted = any_unmeasured && tier.own_file_system;
    const auto beyond = [counted](std::uint64_t used, const std::optional<std::uint64_t>& total,
                                  const std::optional<std::uint64_t>& free) -> std::uint64_t {
        const auto fs_used = in_use_by_file_system(total, free);
        return counted && fs_used && *fs_used > used ? *fs_used - used : 0;
    };
    tier.unmeasured_bytes = beyond(tier.used_bytes, space.total_bytes, space.free_bytes);
    tier.unmeasured_inodes = beyond(tier.used_inodes, space.total_inodes, space.free_inodes);
}

bool over_low_by_file_system(const CacheTierFacts& tier, const TierSpace& now, const Watermarks& marks,
                             const Incoming& incoming)
{
    const Usage usage{in_use_by_file_system(now.total_bytes, now.free_bytes).value_or(0) + incoming.bytes,
                      in_use_by_file_system(now.total_inodes, now.free_inodes).value_or(0) + incoming.inodes};
    return above(usage, tier, marks.low);
}

Incoming& Incoming::operator+=(const Incoming& more)
{
    bytes = saturating_add(bytes, more.bytes);
    inodes = saturating_add(inodes, more.inodes);
    return *this;
}

Incoming still_coming(const std::vector<PromisedUse>& promised, const std::map<std::string, HeldEntry>& held,
                      const std::string& job, const std::set<std::string>& its_own)
{
    std::map<std::string, Incoming> most;  // by entry: several jobs may stage one
    for (const PromisedUse& use : promised) {
        if (use.job == job || its_own.count(use.entry))
            continue;
        Incoming& of_entry = most[use.entry];
        of_entry.bytes = std::max(of_entry.bytes, use.bytes);
        of_entry.inodes = std::max(of_entry.inodes, use.inodes);
    }
    Incoming coming;
    for (const auto& [entry, brings] : most) {
        const auto found = held.find(entry);
        const HeldEntry now = found == held.end() ? HeldEntry{} : found->second;
        if (now.staged)
            continue;
        coming += {brings.bytes > now.bytes ? brings.bytes - now.bytes : 0,
                   brings.inodes > now.inodes ? brings.inodes - now.inodes : 0};
    }
    return coming;
}

EvictionPlan plan_eviction(const std::vector<CacheEntryFacts>& entries, const CacheTierFacts& tier,
                           const Watermarks& marks, const Incoming& incoming)
{
    EvictionPlan plan;
    Usage usage{tier.used_bytes + incoming.bytes, tier.used_inodes + incoming.inodes};
    const Usage seen{usage.bytes + tier.unmeasured_bytes, usage.inodes + tier.unmeasured_inodes};
    if (!above(seen, tier, marks.high)) {
        plan.fits = Verdict::allow("below the high watermark (" + share_text(marks.high) + ")");
        return plan;
    }
    // Entries of known size go only while their usage is over the mark:
    // bytes nobody measured cost only the entries of unknown size.
    const bool measured_over = above(usage, tier, marks.high);
    const std::string before = pressure(measured_over ? usage : seen, tier, marks.high);
    std::vector<std::size_t> order(entries.size());
    std::iota(order.begin(), order.end(), 0);
    // Least recently used first; equal times by name, so that every node
    // and every run decides alike.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (entries[a].last_use != entries[b].last_use)
            return entries[a].last_use < entries[b].last_use;
        return entries[a].name < entries[b].name;
    });
    // Those not measured in time (at their recorded size) first, then the
    // measured ones.
    for (const bool measured : {false, true})
        for (const std::size_t i : order) {
            if (!measured_over || !above(usage, tier, marks.low))
                break;
            const CacheEntryFacts& entry = entries[i];
            if (entry.in_use || !entry.size_known() || entry.measured != measured)
                continue;
            usage.bytes -= std::min(usage.bytes, entry.bytes);
            usage.inodes -= std::min(usage.inodes, entry.inodes);
            plan.evict.push_back(i);
            plan.ask_file_system.push_back(false);
            plan.why.push_back("evict " + entry.name + " (" + format_size(entry.bytes) + ", " +
                               std::to_string(entry.inodes) + " inodes" +
                               (measured ? "" : " at least, not measured whole in time") + ", " +
                               last_use_text(entry.last_use) + "): the tier was at " + before +
                               ", above the high watermark " + share_text(marks.high));
        }
    // Then, on a file system of the tier's own, every entry not measured
    // in time that is left and no job uses: what each gives back is not
    // known.  Last in the plan, so that the room the job needs, which the
    // others give, is made first.
    const std::vector<std::size_t> planned = plan.evict;
    for (const std::size_t i : order) {
        const CacheEntryFacts& entry = entries[i];
        if (!tier.own_file_system || entry.measured || entry.in_use ||
            std::find(planned.begin(), planned.end(), i) != planned.end())
            continue;
        plan.evict.push_back(i);
        plan.ask_file_system.push_back(true);
        plan.why.push_back(
            "evict " + entry.name + " (not measured in time, " +
            (entry.recorded ? "at least " + format_size(entry.bytes) + ", " : std::string("its size unknown, ")) +
            last_use_text(entry.last_use) + "): " + unexplained(tier, seen, marks.high));
    }
    if (!above(usage, tier, 1.0)) {
        plan.fits = Verdict::allow(plan.evict.empty() ? "above the high watermark, but every entry is in use"
                                                      : "evicting " + std::to_string(plan.evict.size()) +
                                                            " unused entries, least recently used first");
        return plan;
    }
    // The job cannot be staged here now: evicting would cost other users
    // their entries and give this job nothing.
    plan.evict.clear();
    plan.why.clear();
    plan.ask_file_system.clear();
    // Other users' entries are counted, not named: their datasets' names
    // come from their private paths.
    std::vector<std::string> busy;
    std::size_t others = 0;
    for (const CacheEntryFacts& entry : entries)
        if (entry.in_use)
            entry.shown ? busy.push_back(entry.name) : void(++others);
    if (others > 0)
        busy.push_back(std::to_string(others) + (others == 1 ? " entry" : " entries") + " of other users");
    plan.fits = Verdict::refuse("the tier would be at " + pressure(usage, tier, 1.0) +
                                " even with every unused cache entry evicted" +
                                (busy.empty() ? std::string() : "; in use by running jobs: " + join(busy, ", ")));
    return plan;
}

}  // namespace dlstage::policy
