#include "policies/overrides.hpp"

#include <algorithm>

#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
std::string known_or(const std::optional<std::string>& value, const char* unknown)
{
    return value ? printable(*value) : unknown;
}

// The tables that match, least specific first, file order breaking ties:
// applying them in this order leaves the winner's value in place.
std::vector<const Override*> matching_in_order(const Config& config, const std::string& tier, const JobIdentity& job)
{
    std::vector<const Override*> rules;
    for (const Override& rule : config.overrides)
        if (rule.tier == tier && matches(rule, job))
            rules.push_back(&rule);
    std::stable_sort(rules.begin(), rules.end(),
                     [](const Override* a, const Override* b) { return specificity(*a) < specificity(*b); });
    return rules;
}

std::string yes_no(bool value)
{
    return value ? "true" : "false";
}
}  // namespace

std::string JobIdentity::str() const
{
    return "partition=" + known_or(partition, "(unknown)") + ", account=" + known_or(account, "(unknown)") +
           ", user=" + known_or(user, "(unknown)") +
           ", groups=" + (groups.empty() ? std::string("(none)") : printable(join(groups, ",")));
}

bool matches(const Override& rule, const JobIdentity& job)
{
    const auto is = [](const std::string& wanted, const std::optional<std::string>& known) {
        return wanted.empty() || (known && *known == wanted);
    };
    const bool in_group = rule.group.empty() ||
                          std::find(job.groups.begin(), job.groups.end(), rule.group) != job.groups.end();
    return is(rule.partition, job.partition) && is(rule.account, job.account) && is(rule.user, job.user) && in_group;
}

int specificity(const Override& rule)
{
    // Weights 8, 4, 2, 1: distinct sums for distinct key sets, so after the
    // count only tables with the same keys tie.
    const bool user = !rule.user.empty(), group = !rule.group.empty(), account = !rule.account.empty(),
               partition = !rule.partition.empty();
    const int keys = int(user) + int(group) + int(account) + int(partition);
    const int weight = 8 * int(user) + 4 * int(group) + 2 * int(account) + int(partition);
    return keys * 16 + weight;
}

Tier effective_tier(const Config& config, const Tier& tier, const JobIdentity& job)
{
    Tier effective = tier;
    for (const Override* rule : matching_in_order(config, tier.name, job)) {
        if (rule->max_bytes) {
            effective.max_bytes = *rule->max_bytes;
            effective.origin["max_bytes"] = rule->label();
        }
        if (rule->max_inodes) {
            effective.max_inodes = rule->max_inodes;
            effective.origin["max_inodes"] = rule->label();
        }
        if (rule->charge_memory) {
            effective.charge_memory = rule->charge_memory;
            effective.origin["charge_memory"] = rule->label();
        }
    }
    return effective;
}

Config config_for_job(const Config& config, const JobIdentity& job)
{
    Config effective = config;
    for (auto& [name, tier] : effective.tiers)
        tier = effective_tier(config, config.tiers.at(name), job);
    return effective;
}

std::vector<KeyValue> explain_tier(const Tier& tier)
{
    const std::string charge_origin =
        tier.charge_memory
            ? tier.origin_of("charge_memory")
            : (tier.charged_by_default() ? "default (a node tier under /dev/shm)" : "default (not under /dev/shm)");
    std::vector<KeyValue> keys = {
        {"path", tier.path.text(), tier.origin_of("path")},
        {"scope", to_string(tier.scope), tier.origin_of("scope")},
        {"cleanup", to_string(tier.cleanup), tier.origin_of("cleanup")},
        {"max_bytes", tier.max_bytes.str(), tier.origin_of("max_bytes")},
        {"max_inodes", tier.max_inodes ? std::to_string(*tier.max_inodes) : "none", tier.origin_of("max_inodes")},
        {"charge_memory", yes_no(tier.charges_memory()), charge_origin},
    };
    if (tier.scope == Scope::Shared) {
        keys.push_back({"purge_days", std::to_string(tier.purge.days), tier.origin_of("purge_days")});
        keys.push_back({"purge_by", to_string(tier.purge.by), tier.origin_of("purge_by")});
        keys.push_back({"warn_days", std::to_string(tier.purge.warn_days), tier.origin_of("warn_days")});
        keys.push_back({"refresh_on_use", yes_no(tier.purge.refresh_on_use), tier.origin_of("refresh_on_use")});
    }
    return keys;
}

}  // namespace dlstage::policy
