#include "spank/submit.hpp"

#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/source_facts.hpp"
#include "lib/stage_spec.hpp"
#include "lib/strings.hpp"
#include "policies/admission.hpp"

namespace dlstage::spank {

namespace {
// The source as the submitting user sees it: sbatch runs as that user, so
// a source they cannot read is refused here, before any root code runs.
void check_source(const StageItem& item)
{
    const SourceFacts facts = probe_source(item.dataset);
    if (facts.state != SourceFacts::State::Present)
        throw Error("cannot stage " + quoted(item.dataset.name) + ": " + facts.problem +
                    (item.dataset.from_catalog ? " (ask your site admins)" : ""));
    const policy::Verdict verdict = policy::admit(item.dataset, item.tier, facts, policy::TierSpace{});
    if (!verdict.allowed)
        throw Error(verdict.reason);
}
}  // namespace

int validate_submission(SpankApi& api, const PluginArgs& args)
{
    const auto value = api.stage_data_option();
    if (!value)
        return 0;
    try {
        const Config config = load_config(choose_config_path(args.config_path, false));
        for (const StageItem& item : plan_stage(config, *value))
            check_source(item);
        return 0;
    } catch (const ConfigError& e) {
        api.error("the site configuration is broken, staging is unavailable: " + std::string(e.what()));
    } catch (const Error& e) {
        api.error(e.what());
    }
    return -1;
}

}  // namespace dlstage::spank
