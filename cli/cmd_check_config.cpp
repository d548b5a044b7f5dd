// dlstage check-config [FILE]: every problem of a configuration file, one
// per line, so an admin fixes them all in one pass.  With --explain: every
// tier key's value for a job (partition, account, user, groups) and where
// it comes from, as policies/overrides resolves it for real jobs.
#include <iomanip>
#include <iostream>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "job/job_identity.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/strings.hpp"
#include "mover/mover_job.hpp"
#include "policies/overrides.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage check-config [FILE]\n"
                 "       dlstage check-config --explain [--partition P] [--account A] [--user U]\n"
                 "                            [--group G]... [--json] [FILE]\n"
                 "Check a dlstage configuration file (default: the one dlstage uses) and print\n"
                 "every problem as FILE:LINE: KEY: MESSAGE.  The file, and every directory\n"
                 "above it, must be owned by root and writable by nobody else: the plugin's\n"
                 "root code refuses it otherwise.  Exit 0 if it is valid, 1 if not.\n"
                 "\n"
                 "  --explain      print every tier key's value for a job and where it comes from\n"
                 "                 (default, tiers.NAME or overrides[N]); the job is described by:\n"
                 "  --partition P  its partition\n"
                 "  --account A    its account\n"
                 "  --user U       its user (the groups are U's, from the group database)\n"
                 "  --group G      a Unix group of the user instead (repeatable)\n"
                 "  --json         print JSON instead\n"
                 "What is not given matches no [[overrides]] table that asks for it.\n";
}

struct ExplainRequest {
    bool explain = false;
    bool json = false;
    policy::JobIdentity job;
    std::vector<std::string> groups;  // --group, instead of the user's
};

void print_explanation(const Config& config, const policy::JobIdentity& job)
{
    std::cout << "# the tiers of " << config.file << " for a job with " << job.str() << "\n";
    for (const auto& [name, tier] : policy::config_for_job(config, job).tiers) {
        std::cout << "\n[tiers." << name << "]\n";
        for (const policy::KeyValue& key : policy::explain_tier(tier))
            std::cout << std::left << std::setw(14) << key.key << " = " << std::setw(24) << key.value << " # "
                      << key.origin << "\n";
    }
}

void print_explanation_json(const Config& config, const policy::JobIdentity& job)
{
    toml::table tiers;
    for (const auto& [name, tier] : policy::config_for_job(config, job).tiers) {
        toml::table keys;
        for (const policy::KeyValue& key : policy::explain_tier(tier))
            keys.insert(key.key, toml::table{{"value", key.value}, {"origin", key.origin}});
        tiers.insert(name, std::move(keys));
    }
    toml::array groups;
    for (const std::string& group : job.groups)
        groups.push_back(group);
    toml::table who{{"groups", std::move(groups)}};
    for (const auto& [key, value] :
         {std::pair{"partition", &job.partition}, {"account", &job.account}, {"user", &job.user}})
        if (*value)
            who.insert(key, **value);
    std::cout << toml::json_formatter{toml::table{{"file", config.file},
                                                  {"job", std::move(who)},
                                                  {"tiers", std::move(tiers)}}}
              << "\n";
}

// Whether Slurm's nodes of the mover partition give what [mover] asks each
// of them: a setting none gives makes Slurm refuse every mover job, and
// with it every two-hop job, with only "Requested node configuration is
// not available".  Where Slurm does not answer (check-config on a host
// without it) that is said, and the file is still valid.
bool mover_fits_partition(const Config& config)
{
    if (!config.mover.configured())
        return true;
    try {
        const policy::Verdict fits = mover::mover_settings_fit(config.mover);
        if (!fits.allowed)
            say(config.file + ": " + fits.reason);
        return fits.allowed;
    } catch (const Error& e) {
        say(config.file + ": [mover] not checked against partition " + dlstage::quoted(config.mover.partition) + ": " +
            e.what());
        return true;
    }
}

}  // namespace

int cmd_check_config(const GlobalOptions& options, const std::vector<std::string>& args)
{
    std::string file;
    ExplainRequest request;
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false},
                                   {"explain", 0, false},
                                   {"json", 0, false},
                                   {"partition", 0, true},
                                   {"account", 0, true},
                                   {"user", 0, true},
                                   {"group", 0, true}});
    } catch (const UsageError& e) {
        return usage_error("check-config: " + std::string(e.what()), "check-config");
    }
    if (parsed.has("help")) {
        print_help();
        return kExitOk;
    }
    request.explain = parsed.has("explain");
    request.json = parsed.has("json");
    request.job.partition = parsed.last("partition");
    request.job.account = parsed.last("account");
    request.job.user = parsed.last("user");
    request.groups = parsed.all("group");
    if (parsed.operands.size() > 1)
        return usage_error("check-config takes at most one FILE", "check-config");
    if (!parsed.operands.empty())
        file = parsed.operands.front();
    const bool describes_job = request.job.partition || request.job.account || request.job.user ||
                               !request.groups.empty() || request.json;
    if (describes_job && !request.explain)
        return usage_error("check-config: --partition, --account, --user, --group and --json go with --explain",
                           "check-config");
    if (file.empty())
        file = choose_config_path(options.config_path, true);
    try {
        const Config config = load_trusted_config(file);
        if (request.explain) {
            request.job.groups = request.groups.empty() && request.job.user ? unix_groups(*request.job.user)
                                                                            : request.groups;
            if (request.json)
                print_explanation_json(config, request.job);
            else
                print_explanation(config, request.job);
            return kExitOk;
        }
        if (!mover_fits_partition(config))
            return kExitFailure;
        std::cout << file << ": OK (" << config.tiers.size() << " tiers, " << config.datasets.size() << " datasets"
                  << (config.overrides.empty() ? "" : ", " + std::to_string(config.overrides.size()) + " overrides")
                  << (config.mover.configured() ? ", mover partition " + config.mover.partition : "") << ")\n";
        return kExitOk;
    } catch (const ConfigError& e) {
        for (const ConfigProblem& problem : e.problems())
            say(problem.str());
        std::cerr << file << ": " << e.problems().size() << (e.problems().size() == 1 ? " problem" : " problems")
                  << "\n";
    } catch (const Error& e) {
        say(e.what());
    }
    return kExitFailure;
}

}  // namespace dlstage::cli
