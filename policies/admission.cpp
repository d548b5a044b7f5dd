#include "policies/admission.hpp"

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
}  // namespace

Verdict supported(const Dataset& /*dataset*/, const Tier& tier)
{
    if (tier.scope == Scope::Shared)
        return Verdict::refuse("tier " + quoted(tier.name) +
                               " has scope = \"shared\", which this version of dlstage cannot stage to yet");
    return Verdict::allow();
}

Verdict admit(const Dataset& dataset, const Tier& tier, const SourceFacts& facts, const TierSpace& space)
{
    const std::string what = "dataset " + quoted(dataset.name);
    const std::string where = "tier " + quoted(tier.name);

    if (facts.bytes) {
        const auto limit = tier.max_bytes.resolve(space.total_bytes);
        if (limit && *facts.bytes > *limit)
            return Verdict::refuse(what + " needs " + format_size(*facts.bytes) + " but " + where +
                                   " allows at most " + format_size(*limit) + " (max_bytes = " +
                                   tier.max_bytes.str() + ")" + other_tiers(dataset, tier));
        if (space.free_bytes && *facts.bytes > *space.free_bytes)
            return Verdict::refuse(what + " needs " + format_size(*facts.bytes) + " but " + where + " has only " +
                                   format_size(*space.free_bytes) + " free" + other_tiers(dataset, tier));
    }
    if (facts.files) {
        if (tier.max_inodes && *facts.files > *tier.max_inodes)
            return Verdict::refuse(what + " has " + std::to_string(*facts.files) + " files but " + where +
                                   " allows at most " + std::to_string(*tier.max_inodes) + " (max_inodes)" +
                                   fewer_files_advice(dataset));
        if (space.free_inodes && *facts.files > *space.free_inodes)
            return Verdict::refuse(what + " has " + std::to_string(*facts.files) + " files but " + where +
                                   " has only " + std::to_string(*space.free_inodes) + " free inodes" +
                                   fewer_files_advice(dataset));
    }
    return Verdict::allow();
}

}  // namespace dlstage::policy
