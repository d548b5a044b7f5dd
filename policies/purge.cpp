#include "policies/purge.hpp"

#include <algorithm>
#include <ctime>

#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
constexpr std::int64_t kDay = 86400;
}

std::int64_t purge_clock(PurgeBy by, const FileTimes& times)
{
    switch (by) {
    case PurgeBy::Atime: return times.atime;
    case PurgeBy::Mtime: return times.mtime;
    case PurgeBy::Ctime: return times.ctime;
    case PurgeBy::Max: return std::max({times.atime, times.mtime, times.ctime});
    }
    return times.atime;
}

bool keeps_source_mtimes(const Tier& tier)
{
    return !(tier.scope == Scope::Shared && tier.purge.days > 0 && tier.purge.by == PurgeBy::Mtime);
}

bool mtimes_tell_writes(bool unpacked, const Tier& tier)
{
    return unpacked || keeps_source_mtimes(tier);
}

std::optional<std::int64_t> purge_date(const PurgeRule& rule, std::int64_t oldest)
{
    if (rule.days <= 0)
        return std::nullopt;
    return oldest + rule.days * kDay;
}

Verdict purge_warning(const PurgeRule& rule, const std::string& dataset, const std::string& tier, std::int64_t oldest,
                      std::int64_t now)
{
    const auto date = purge_date(rule, oldest);
    if (!date || *date - now > rule.warn_days * kDay)
        return Verdict::allow();
    const std::string what = "the copy of " + quoted(dataset) + " in tier " + quoted(tier);
    const std::string rule_text = "files unused for " + std::to_string(rule.days) + " days by " + to_string(rule.by);
    if (*date <= now)
        return Verdict::allow(what + " may already be partly purged (" + rule_text +
                              "); the job checks it and stages what is missing again");
    return Verdict::allow(what + " will be purged from " + day_text(*date) + " (" + rule_text +
                          "); if it is gone by then the job stages it again");
}

}  // namespace dlstage::policy
