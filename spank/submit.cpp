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
#include "lib/strings.hpp"
#include "policies/admission.hpp"
#include "policies/overrides.hpp"
#include "spank/purge_notice.hpp"
#include "spank/source_facts_env.hpp"
#include "spank/stage_command.hpp"
#include "spank/wait_for_mover.hpp"

namespace dlstage::spank {

namespace {
// The source as the submitting user sees it: sbatch runs as that user, so
// a source they cannot read is refused here, before any root code runs.
// A tree's size and entries come from its manifest in site.manifest_dir
// (header only, one stat of the root: no walk of the parallel file system).
// A reach = "mover" dataset's source is not looked at: this host may not
// see it; only the mover job's nodes do (probe_far_source).
SourceFacts check_source(SpankApi& api, const Config& config, const StageItem& item)
{
    policy::require(policy::supported(item.dataset, item.tier));
    const SourceFacts facts = item.dataset.reach == Reach::Mover
                                  ? probe_far_source(item.dataset, config.site.manifests())
                                  : probe_source(item.dataset, config.site.manifests());
    if (!facts.note.empty())
        api.info(facts.note);
    if (facts.state != SourceFacts::State::Present)
        throw Error("cannot stage " + quoted(item.dataset.name) + ": " + facts.problem +
                    (item.dataset.from_catalog ? " (ask your site admins)" : ""));
    policy::require(policy::admit(item.dataset, item.tier, facts, policy::TierSpace{}));
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
        if (api.context() == Context::Allocator || api.getenv(kJobIdVar).empty())
            wait_for_movers(api, config, items, user, partition, args.dlstage_path);
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
