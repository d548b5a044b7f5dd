#include "policies/two_hop.hpp"

#include <algorithm>
#include <utility>

#include "policies/slurm_states.hpp"

namespace dlstage::policy {

bool reads_source_here(const Dataset& dataset, const std::optional<std::string>& partition, const MoverSettings& mover)
{
    if (dataset.reach != Reach::Mover)
        return true;
    return partition && mover.configured() && *partition == mover.partition;
}

Dataset second_hop(const Dataset& dataset, const std::string& copy)
{
    Dataset hop = dataset;
    hop.from_catalog = false;
    hop.reach = Reach::Compute;
    hop.immutable = false;  // no manifest vouches for the copy
    if (dataset.mode == Mode::Extract) {
        hop.source = copy;  // the archives, unpacked
        hop.format = Format::Dir;
        hop.mode = Mode::Copy;
        return hop;
    }
    const std::string& source = dataset.source;
    const bool glob = source.find_first_of("*?[") != std::string::npos;
    // Shards matched by a glob sit in the copy's directory under their names.
    hop.source = glob ? copy + source.substr(source.rfind('/')) : copy;
    hop.format = dataset.known_format();
    return hop;
}

Verdict via_copy_usable(const ViaCopyFacts& facts, const std::string& tier)
{
    if (!facts.has_record || !facts.in_place)
        return Verdict::refuse("there is no complete copy in " + tier + " yet");
    if (!facts.same_mode)
        return Verdict::refuse("the copy in " + tier + " was made in another mode");
    if (facts.manifest_scanned != 0 && facts.manifest_scanned != facts.checked_scan)
        return Verdict::refuse("the source was scanned again since the copy in " + tier + " was checked");
    if (facts.found_changed)
        return Verdict::refuse("a job found the copy in " + tier + " changed since its mover job made it");
    if (facts.purge_date && *facts.purge_date <= facts.now)
        return Verdict::refuse("the site's purge may have taken files of the copy in " + tier);
    if (!facts.immutable)
        return Verdict::refuse("the source may have changed since the copy in " + tier + " was made");
    return Verdict::allow();
}

bool may_share_mover(const Dataset& dataset, std::string_view state)
{
    return dataset.immutable || state == "PENDING";
}

std::int64_t requeue_margin(std::int64_t limit)
{
    return std::clamp<std::int64_t>(limit / 10, 10, 60);
}

AtLimit mover_at_limit(const MoverClock& clock)
{
    if (!clock.running || clock.limit <= 0 || clock.left > requeue_margin(clock.limit))
        return AtLimit::Wait;
    return clock.progressed ? AtLimit::Requeue : AtLimit::RunOut;
}

std::int64_t next_look(const MoverClock& clock)
{
    if (clock.limit <= 0)
        return 10;
    return std::clamp<std::int64_t>(clock.left - requeue_margin(clock.limit), 1, 10);
}

Verdict hop_supported(const Dataset& dataset, const Tier& tier)
{
    if (dataset.reach == Reach::Mover && tier.cleanup == Cleanup::Cache)
        return Verdict::refuse(dataset.name + " is read only on the mover nodes, and the node cache " + tier.name +
                               " cannot take it yet: choose another of its tiers");
    return Verdict::allow();
}

Verdict dependency_with_movers(const std::vector<std::string>& movers, const std::optional<std::string>& theirs,
                               std::string& merged)
{
    merged = "afterok";
    for (const std::string& id : movers)
        merged += ":" + id;
    if (!theirs || theirs->empty())
        return Verdict::allow();
    if (theirs->find('?') != std::string::npos)
        return Verdict::refuse("--dependency=" + *theirs +
                               " lets the job start when any one is satisfied, before the copy its mover job makes: "
                               "join them with ',' instead");
    merged += "," + *theirs;
    return Verdict::allow();
}

MoverFate mover_fate(std::string_view state, std::string_view reason)
{
    MoverFate fate;
    if (state == "COMPLETED") {
        fate.kind = MoverFate::Kind::Copied;
        return fate;
    }
    if (state.empty()) {
        fate.kind = MoverFate::Kind::Gone;
        return fate;
    }
    if (slurm_state_is_live(state)) {
        // JobHeldUser, JobHeldAdmin; a requeued job Slurm holds.
        fate.held = (state == "PENDING" && reason.rfind("JobHeld", 0) == 0) || state == "SPECIAL_EXIT" ||
                    state == "REQUEUE_HOLD";
        if (fate.held)
            fate.reason = state == "PENDING" ? std::string(reason) : std::string(state);
        return fate;
    }
    fate.kind = MoverFate::Kind::Ended;
    static const std::pair<std::string_view, const char*> kWhy[] = {
        {"CANCELLED", "it was cancelled"},         {"TIMEOUT", "it reached its time limit"},
        {"NODE_FAIL", "its node failed"},          {"BOOT_FAIL", "its node failed to boot"},
        {"PREEMPTED", "it was preempted"},         {"DEADLINE", "it reached its deadline"},
        {"OUT_OF_MEMORY", "it ran out of memory"}, {"FAILED", "it failed"},
    };
    fate.reason = "it ended " + std::string(state);  // a state this version does not know
    for (const auto& [word, why] : kWhy)
        if (state == word)
            fate.reason = why;
    return fate;
}

}  // namespace dlstage::policy
