#include "policies/admission.hpp"

#include <algorithm>

#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
std::string other_tiers(const Dataset& dataset, const Tier& tier)
{
    std::vector<std::string> others;
    for (const auto& name : dataset.tiers)
        if (name != tier.name)
            others.push_back(name);
    return others.empty() ? "" : "; allowed tiers: " + join(others, ", ");
}

std::string fewer_files_advice(const Dataset& dataset)
{
    return dataset.known_format() == Format::Squashfs ? ""
                                                      : "; stage a squashfs image or tar shards instead "
                                                        "(built by 'dlstage pack')";
}

// ", set by overrides[0] (partition=gpu, line 31)" when an override gave
// the tier this key for this job: the user learns why this job's limit
// differs from the tier's.
std::string overridden(const Tier& tier, const std::string& key)
{
    const std::string origin = tier.origin_of(key);
    return starts_with(origin, "overrides[") ? ", set by " + origin : "";
}

// What is left of a free amount once `used` of it is taken; nothing when
// the free amount is unknown.
std::optional<std::uint64_t> left_after(std::optional<std::uint64_t> free, std::optional<std::uint64_t> used)
{
    if (!free)
        return std::nullopt;
    return *free - std::min(*free, used.value_or(0));
}

// The tier's own limit, unless what is free on the node is tighter.
ExtractionLimit tighter(ExtractionLimit rule, ExtractionLimit room)
{
    return room.most && (!rule.most || *room.most < *rule.most) ? room : rule;
}
}  // namespace

Verdict supported(const Dataset& dataset, const Tier& tier)
{
    // One squashfuse per node on one image in a shared directory, kept
    // across jobs, would tie the copy's life to mounts on many nodes.
    if (tier.scope == Scope::Shared && dataset.mode == Mode::Mount)
        return Verdict::refuse("dataset " + quoted(dataset.name) + " has mode = \"mount\", which a shared tier (" +
                               quoted(tier.name) +
                               ") does not offer: stage it to a node tier, or use mode = "
                               "\"extract\" or \"copy\"");
    // A cached image would stay mounted past its job, or be mounted by
    // several jobs at once: the cache keeps copies and unpacked trees.
    if (tier.scope == Scope::Node && tier.cleanup == Cleanup::Cache && dataset.mode == Mode::Mount)
        return Verdict::refuse("dataset " + quoted(dataset.name) + " has mode = \"mount\", which a node cache (" +
                               quoted(tier.name) +
                               ", cleanup = \"cache\") does not offer: use mode = \"extract\" "
                               "or \"copy\", or a tier without a cache");
    return Verdict::allow();
}

Verdict admit(const Dataset& dataset, const Tier& tier, const SourceFacts& facts, const TierSpace& space)
{
    const std::string what = "dataset " + quoted(dataset.name);
    const std::string where = "tier " + quoted(tier.name);

    if (facts.bytes) {
        const auto limit = tier.max_bytes.resolve(space.total_bytes);
        if (limit && *facts.bytes > *limit)
            return Verdict::refuse(what + " needs " + format_size(*facts.bytes) + " but " + where + " allows at most " +
                                   format_size(*limit) + " (max_bytes = " + tier.max_bytes.str() +
                                   overridden(tier, "max_bytes") + ")" + other_tiers(dataset, tier));
        if (space.free_bytes && *facts.bytes > *space.free_bytes)
            return Verdict::refuse(what + " needs " + format_size(*facts.bytes) + " but " + where + " has only " +
                                   format_size(*space.free_bytes) + " free" + other_tiers(dataset, tier));
    }
    if (facts.files) {
        if (tier.max_inodes && *facts.files > *tier.max_inodes)
            return Verdict::refuse(what + " has " + std::to_string(*facts.files) + " files but " + where +
                                   " allows at most " + std::to_string(*tier.max_inodes) + " (max_inodes" +
                                   overridden(tier, "max_inodes") + ")" + fewer_files_advice(dataset));
        if (space.free_inodes && *facts.files > *space.free_inodes)
            return Verdict::refuse(what + " has " + std::to_string(*facts.files) + " files but " + where +
                                   " has only " + std::to_string(*space.free_inodes) + " free inodes" +
                                   fewer_files_advice(dataset));
    }
    return Verdict::allow();
}

namespace {
constexpr std::uint64_t kGiB = std::uint64_t(1) << 30;

// What to ask for: the staged bytes, an eighth more (at least 1 GiB) for
// the job itself, in whole GiB as Slurm's --mem takes them.
std::string mem_to_ask(std::uint64_t staged)
{
    const std::uint64_t wanted = staged + std::max(staged / 8, kGiB);
    return "--mem=" + std::to_string((wanted + kGiB - 1) / kGiB) + "G";
}

// Tiers of the dataset that charge no memory: where it could go instead.
std::vector<std::string> uncharged_tiers(const Config& config, const Dataset& dataset)
{
    std::vector<std::string> names;
    for (const std::string& name : dataset.tiers)
        if (const Tier* tier = config.find_tier(name); tier && !tier->charges_memory())
            names.push_back(quoted(name));
    return names;
}

std::string pages_counted(const Tier& tier)
{
    return tier.charged_by_default() ? "/dev/shm pages count against it"
                                     : "tmpfs pages in " + tier.path.root() + " count against it";
}
}  // namespace

Verdict fits_in_memory(const Config& config, const std::vector<StageItem>& items,
                       const std::map<std::string, SourceFacts>& facts, const JobMemory& memory)
{
    if (!memory.per_node)
        return Verdict::allow();
    std::uint64_t staged = 0;
    std::vector<std::string> what, tiers, instead;
    const Tier* first_tier = nullptr;
    for (const StageItem& item : items) {
        const auto known = facts.find(item.dataset.name);
        if (item.tier.scope != Scope::Node || !item.tier.charges_memory() || known == facts.end() ||
            !known->second.bytes)
            continue;
        staged += *known->second.bytes;
        what.push_back(item.dataset.name + " (" + format_size(*known->second.bytes) + ")");
        if (std::find(tiers.begin(), tiers.end(), quoted(item.tier.name)) == tiers.end())
            tiers.push_back(quoted(item.tier.name));
        if (!first_tier)
            first_tier = &item.tier;
        if (instead.empty())
            instead = uncharged_tiers(config, item.dataset);
    }
    if (staged <= *memory.per_node)
        return Verdict::allow();
    return Verdict::refuse(join(what, " and ") + (what.size() == 1 ? " does" : " do") +
                           " not fit in the job's memory on " + (tiers.size() == 1 ? "tier " : "tiers ") +
                           join(tiers, ", ") + " (" + memory.asked + "; " + pages_counted(*first_tier) + "): ask for " +
                           mem_to_ask(staged) + (instead.empty() ? "" : " or stage to " + join(instead, " or ")));
}

std::string ExtractionLimit::reason(const std::string& archive) const
{
    return words + " while extracting " + archive + "; " + advice;
}

ExtractionBudget extraction_budget(const Dataset& dataset, const Tier& tier, const SourceFacts& archives,
                                   const TierSpace& space)
{
    const auto limit = [&](std::optional<std::uint64_t> most, bool of_bytes, const std::string& rule,
                           const std::string& advice) {
        if (!most)
            return ExtractionLimit{};
        const std::string amount = of_bytes ? format_size(*most) : std::to_string(*most) + " entries";
        return ExtractionLimit{most,
                               "dataset " + quoted(dataset.name) + " expands to more than " + amount + " in tier " +
                                   quoted(tier.name) + " (" + rule + ")",
                               advice + other_tiers(dataset, tier)};
    };
    const std::string mount_instead =
        dataset.known_format() == Format::Squashfs ? ", mount the image instead (mode = \"mount\")" : "";
    ExtractionBudget budget;
    budget.bytes = tighter(limit(tier.max_bytes.resolve(space.total_bytes), true, "max_bytes = " + tier.max_bytes.str(),
                                 "check the archive, or ask your admins for a larger max_bytes"),
                           limit(left_after(space.free_bytes, archives.bytes), true, "its free space on this node",
                                 "check the archive"));
    budget.entries =
        tighter(limit(tier.max_inodes, false, "max_inodes",
                      "check the archive" + mount_instead + ", or ask your admins for a larger max_inodes"),
                limit(left_after(space.free_inodes, archives.files), false, "its free inodes on this node",
                      "check the archive" + mount_instead));
    return budget;
}

ExtractionBudget extraction_share(const ExtractionBudget& whole, std::uint64_t part, std::uint64_t total)
{
    const auto share = [&](ExtractionLimit limit) {
        if (limit.most && total > 0 && part < total) {
            const unsigned __int128 scaled = static_cast<unsigned __int128>(*limit.most) * part;
            limit.most = static_cast<std::uint64_t>((scaled + total - 1) / total);
        }
        return limit;
    };
    return {share(whole.bytes), share(whole.entries)};
}

}  // namespace dlstage::policy
