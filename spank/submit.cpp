#include "spank/submit.hpp"

#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "config/stage_spec.hpp"
#include "dataset/catalog_listing.hpp"
#include "dataset/source_probe.hpp"
#include "job/identity.hpp"
#include "job/job_identity.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "policies/admission.hpp"
#include "policies/overrides.hpp"
#include "policies/split_placement.hpp"
#include "spank/prefer_cached.hpp"
#include "spank/purge_notice.hpp"
#include "spank/source_facts_env.hpp"
#include "spank/stage_command.hpp"
#include "spank/wait_for_mover.hpp"

namespace dlstage::spank {

namespace {
// The fewest nodes the job may get, as -N says ("3", or "3-5"); 0 when
// not known here: no -N (Slurm says "1-0": the node count comes from
// --nodelist, the tasks or the partition later), or a Slurm that does not
// tell.  The node checks its share then.
std::size_t nodes_asked(SpankApi& api)
{
    const std::optional<std::string> nodes = api.client_option("nodes");
    if (!nodes)
        return 0;
    const std::size_t dash = nodes->find('-');
    try {
        const std::uint64_t least = parse_count(nodes->substr(0, dash), 1, kMaxSlurmNumber);
        if (dash != std::string::npos && parse_count(nodes->substr(dash + 1), 0, kMaxSlurmNumber) < least)
            return 0;
        return static_cast<std::size_t>(least);
    } catch (const Error&) {
        return 0;
    }
}

policy::SplitFacts split_facts(const StageItem& item, const SourceFacts& facts, std::size_t nodes)
{
    policy::SplitFacts split;
    split.dataset = item.dataset.name;
    split.asked_as = item.dataset.requested_as();
    split.tier = item.tier.name;
    split.shard_sizes = facts.parts;
    split.total = facts.bytes;
    split.room = item.tier.max_bytes.resolve(std::nullopt);
    split.nodes = nodes;
    split.split_asked = item.split;
    return split;
}

// What one node of the job gets of a split dataset, as far as submit
// knows: its largest share and a node's part of the entries (the node
// counts again).
SourceFacts node_share(const SourceFacts& facts, const policy::SplitFacts& split, std::size_t nodes)
{
    SourceFacts share = facts;
    share.parts.clear();
    share.bytes = policy::largest_share(split, nodes);
    if (facts.files && nodes > 0)
        share.files = (*facts.files + nodes - 1) / nodes;
    else
        share.files.reset();
    return share;
}

// A dataset larger than a node's tier is admitted split when the job asks
// for it on enough nodes (policies/split_placement), each node checked for
// its share; one that would fit split is refused whole with how.
void admit_on_each_node(SpankApi& api, const StageItem& item, SourceFacts& facts)
{
    if (!item.split) {
        const policy::Verdict whole = policy::admit(item.dataset, item.tier, facts, policy::TierSpace{});
        policy::require(
            policy::with_split_advice(whole, item.dataset, item.tier, facts.format, split_facts(item, facts, 0)));
        return;
    }
    policy::require(policy::split_possible(item.dataset, item.tier, facts.format));
    const std::size_t nodes = nodes_asked(api);
    const policy::SplitFacts split = split_facts(item, facts, nodes);
    policy::require(policy::admit_placement(split));
    facts = node_share(facts, split, nodes);
    policy::require(policy::admit(item.dataset, item.tier, facts, policy::TierSpace{}));
}

// The source as the submitting user sees it: sbatch runs as that user, so
// a source they cannot read is refused here, before any root code runs.
// A tree's size and entries come from its manifest in site.manifest_dir
// (header only, one stat of the root: no walk of the parallel file system).
// A reach = "mover" dataset's source is not looked at: this host may not
// see it; only the mover job's nodes do (probe_far_source).
SourceFacts check_source(SpankApi& api, const Config& config, const StageItem& item)
{
    policy::require(policy::supported(item.dataset, item.tier));
    SourceFacts facts = item.dataset.reach == Reach::Mover ? probe_far_source(item.dataset, config.site.manifests())
                                                           : probe_source(item.dataset, config.site.manifests());
    if (!facts.note.empty())
        api.info(facts.note);
    if (facts.state != SourceFacts::State::Present)
        throw Error("cannot stage " + quoted(item.dataset.name) + ": " + facts.problem +
                    (item.dataset.from_catalog ? " (ask your site admins)" : ""));
    admit_on_each_node(api, item, facts);
    return facts;
}
}  // namespace

int validate_submission(SpankApi& api, const PluginArgs& args)
{
    const auto value = api.stage_data_option();
    if (!value || in_stagers_own_step(api))
        return 0;
    try {
        if (*value == kStageDataHelp) {
            const Config config = load_trusted_config(choose_config_path(args.config_path, false));
            api.print(stage_data_help(config, catalog_rows(config)));
            api.end_client(0);
            return 0;  // the seam's end_client may return (unit tests)
        }
        // The tiers as this job gets them, as far as its options tell
        // (policies/overrides); the prolog decides again with what slurmd knows.
        const std::string user = this_user_name();
        const std::optional<std::string> partition = api.client_option("partition");
        const Config config =
            policy::config_for_job(load_trusted_config(choose_config_path(args.config_path, false)),
                                   identity_from_options(partition, api.client_option("account"), user));
        std::map<std::string, SourceFacts> facts;
        const std::vector<StageItem> items = resolve_stage_data(config, *value);
        for (const StageItem& item : items) {
            facts[item.dataset.name] = check_source(api, config, item);
            warn_of_purge(api, item, user);
        }
        policy::require(policy::fits_in_memory(config, items, facts, memory_from_option(api.client_option("mem"))));
        // Last: nothing is submitted for a job refused above.  An srun
        // inside a job (SLURM_JOB_ID set) starts a step, not a job to wait.
        if (api.context() == Context::Allocator || api.getenv(kJobIdVar).empty()) {
            wait_for_movers(api, config, items, user, partition, args.dlstage_path);
            prefer_cached_nodes(api, config, items, nodes_asked(api));
        }
        // For the prolog's space check on each node; and the configuration
        // for `dlstage stage` in the job (SLURM_SPANK_DLSTAGE_CONFIG).
        api.job_control_setenv(kFactsVar, encode_facts(facts));
        api.job_control_setenv(kConfigVar, choose_config_path(args.config_path, false));
        return 0;
    } catch (const ConfigError& e) {
        api.error("the site configuration is broken, staging is unavailable: " + std::string(e.what()));
    } catch (const Error& e) {
        api.error(e.what());
    }
    return -1;
}

}  // namespace dlstage::spank
