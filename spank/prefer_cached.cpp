#include "spank/prefer_cached.hpp"

#include <algorithm>
#include <unistd.h>

#include "job/slurm_nodes.hpp"
#include "lib/strings.hpp"
#include "policies/node_features.hpp"
#include "policies/slurm_states.hpp"

namespace dlstage::spank {

namespace {
// sinfo's bound at submit: a slow controller costs the preference, not
// the submission.
constexpr int kSinfoSeconds = 5;

// A node-cached dataset of the job and the feature a node holding the
// user's entry of it has.
struct CachedWant {
    std::string dataset;
    std::string feature;
};

// The job's node-cached datasets, in the request's order; a split
// share's only when the number of nodes is known (each node holds a share
// of that many).
std::vector<CachedWant> cached_wants(const Config& config, const std::vector<StageItem>& items, std::size_t nodes)
{
    std::vector<CachedWant> wants;
    for (const StageItem& item : items) {
        if (!item.tier.node_cache() || !item.dataset.from_catalog || (item.split && nodes == 0))
            continue;
        wants.push_back({item.dataset.name,
                         policy::entry_feature(config.locality,
                                               {item.dataset.name, ::getuid(), item.split ? nodes : std::size_t{0}})});
    }
    return wants;
}

// The datasets whose features `prefer` names, as "a, b".
std::string datasets_in(const std::vector<CachedWant>& wants, const std::string& prefer)
{
    const std::vector<std::string> named = split(prefer, '&');
    std::string names;
    for (const CachedWant& want : wants)
        if (std::find(named.begin(), named.end(), want.feature) != named.end())
            names += (names.empty() ? "" : ", ") + want.dataset;
    return names;
}

// The job's nodes as the rule counts them: -N's, else one for one task
// (Slurm's default); 0 when submit cannot know, or the job names or
// leaves out nodes or takes a reservation's: Slurm 22.05 refuses a job
// whose preference no node it may get holds, and sinfo's nodes are not
// those (checked on the test cluster with -x).
std::size_t nodes_of_job(SpankApi& api, std::size_t nodes)
{
    for (const char* narrowing : {"nodelist", "exclude", "reservation"})
        if (!api.client_option(narrowing).value_or("").empty())
            return 0;
    if (nodes > 0)
        return nodes;
    return api.client_option("ntasks").value_or("1") == "1" ? 1 : 0;
}
}  // namespace

void prefer_cached_nodes(SpankApi& api, const Config& config, const std::vector<StageItem>& items, std::size_t nodes)
{
    if (!config.locality.node_features)
        return;
    policy::PreferenceFacts facts;
    facts.nodes_asked = nodes_of_job(api, nodes);
    const std::vector<CachedWant> wants = cached_wants(config, items, facts.nodes_asked);
    for (const CachedWant& want : wants)
        facts.wanted.push_back(want.feature);
    if (facts.wanted.empty())
        return;
    facts.users_prefer = api.client_option("prefer").value_or("");
    const auto no_preference = [&](const std::string& why) {
        std::string names;
        for (const CachedWant& want : wants)
            names += (names.empty() ? "" : ", ") + want.dataset;
        api.verbose(names + ": no preference for nodes holding your copy: " + why);
    };
    if (facts.users_prefer.empty() && facts.nodes_asked > 0) {
        std::string problem;
        const auto rows = ask_partition_nodes(api.client_option("partition").value_or(""), kSinfoSeconds, problem);
        if (!rows) {
            no_preference("sinfo did not say which nodes hold it (" + problem + ")");
            return;
        }
        for (const PartitionNodeRow& row : *rows)
            facts.nodes.push_back(
                {{row.features.begin(), row.features.end()}, policy::slurm_node_may_take_jobs(row.state)});
    }
    const policy::Preference preference = policy::job_preference(facts);
    if (preference.prefer.empty()) {
        no_preference(preference.why);
        return;
    }
    if (!api.set_client_option("prefer", preference.prefer)) {
        no_preference("Slurm did not take --prefer");
        return;
    }
    api.info(datasets_in(wants, preference.prefer) +
             ": this job prefers the nodes whose cache holds your copy (--prefer=" + preference.prefer +
             "); it runs elsewhere when none of them is free");
}

}  // namespace dlstage::spank
