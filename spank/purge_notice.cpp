#include "spank/purge_notice.hpp"

#include <ctime>

#include "job/copy_record.hpp"
#include "lib/error.hpp"
#include "policies/purge.hpp"

namespace dlstage::spank {

void warn_of_purge(SpankApi& api, const StageItem& item, const std::string& user)
{
    const Tier& tier = item.tier;
    if (!tier.shared() || !tier.keeps_copies() || tier.purge.days <= 0)
        return;
    try {
        // The user's own record, read as the user (submit runs as them).
        const auto record = read_copy_record(copy_record_path(tier, item.dataset.name, user));
        if (!record || record->oldest <= 0)
            return;
        const policy::Verdict verdict = policy::purge_warning(tier.purge, item.dataset.name, tier.name, record->oldest,
                                                              static_cast<std::int64_t>(std::time(nullptr)));
        if (!verdict.reason.empty())
            api.info("warning: " + verdict.reason);
    } catch (const Error&) {
        // No readable record: nothing is known, so nothing to warn of.
    }
}

}  // namespace dlstage::spank
