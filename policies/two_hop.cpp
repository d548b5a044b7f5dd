#include "policies/two_hop.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "lib/size.hpp"
#include "lib/strings.hpp"
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

namespace {
// sbatch --mem in MiB: a whole number, MiB unless a unit (K, M, G, T)
// says otherwise; nothing for "" (none asked) or a value config refuses.
// The node with the most of one resource, and how much.
template <typename Of>
const PartitionNode& richest(const std::vector<PartitionNode>& nodes, Of of)
{
    return *std::max_element(nodes.begin(), nodes.end(),
                             [&](const PartitionNode& a, const PartitionNode& b) { return of(a) < of(b); });
}

std::string names_of(const std::vector<PartitionNode>& nodes)
{
    std::string names;
    for (std::size_t i = 0; i < nodes.size() && i < 4; ++i)
        names += (i ? ", " : "") + nodes[i].name;
    return names + (nodes.size() > 4 ? ", ..." : "");
}
}  // namespace

bool node_fits_mover(const MoverSettings& mover, std::uint64_t cpus, std::uint64_t memory_mib)
{
    const std::optional<std::uint64_t> memory = slurm_memory_mib(mover.memory);
    return cpus >= static_cast<std::uint64_t>(std::max(mover.cpus_per_task, 1)) && (!memory || memory_mib >= *memory);
}

Verdict mover_fits_nodes(const MoverSettings& mover, const std::vector<PartitionNode>& nodes)
{
    const std::string partition = "partition " + quoted(mover.partition);
    if (nodes.empty())
        return Verdict::refuse("[mover] partition = " + quoted(mover.partition) +
                               ": Slurm knows no node in it: name a partition sinfo lists");
    std::vector<std::string> unmet;
    const PartitionNode& most_cpus = richest(nodes, [](const PartitionNode& n) { return n.cpus; });
    if (most_cpus.cpus < static_cast<std::uint64_t>(mover.cpus_per_task))
        unmet.push_back("[mover] cpus_per_task = " + std::to_string(mover.cpus_per_task) +
                        " is more than any node of " + partition + " has (at most " + std::to_string(most_cpus.cpus) +
                        " CPUs, on " + most_cpus.name + "): set it to " + std::to_string(most_cpus.cpus) + " or less");
    const std::optional<std::uint64_t> memory = slurm_memory_mib(mover.memory);
    const PartitionNode& most_memory = richest(nodes, [](const PartitionNode& n) { return n.memory_mib; });
    if (memory && most_memory.memory_mib < *memory)
        unmet.push_back("[mover] memory = \"" + mover.memory + "\" (" + std::to_string(*memory) +
                        " MiB) is more than any node of " + partition + " has (at most " +
                        std::to_string(most_memory.memory_mib) + " MiB, on " + most_memory.name + "): set it to " +
                        std::to_string(most_memory.memory_mib) + "M or less");
    if (!unmet.empty())
        return Verdict::refuse(join(unmet, "; "));
    std::vector<PartitionNode> fit;
    for (const PartitionNode& node : nodes)
        if (node_fits_mover(mover, node.cpus, node.memory_mib))
            fit.push_back(node);
    if (fit.size() < static_cast<std::size_t>(mover.nodes))
        return Verdict::refuse("[mover] nodes = " + std::to_string(mover.nodes) + " but only " +
                               std::to_string(fit.size()) + " of the nodes of " + partition + " (" + names_of(fit) +
                               ") give cpus_per_task = " + std::to_string(mover.cpus_per_task) +
                               (mover.memory.empty() ? "" : " and memory = \"" + mover.memory + "\"") +
                               ": lower nodes, or what each node is asked for");
    return Verdict::allow(std::to_string(fit.size()) + " nodes of " + partition + " can run a mover job");
}

}  // namespace dlstage::policy
