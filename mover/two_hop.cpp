#include "mover/two_hop.hpp"

#include <ctime>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "mover/via_copy.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

std::vector<StageItem> as_staged_here(const Config& config, std::vector<StageItem> items,
                                      const std::optional<std::string>& partition, const std::string& user)
{
    for (StageItem& item : items) {
        if (policy::reads_source_here(item.dataset, partition, config.mover))
            continue;
        const ViaCopy copy = look_at_via_copy(config, item.dataset, user, 0, std::time(nullptr));
        if (!copy.facts.has_record || !copy.facts.in_place)
            throw Error(item.dataset.name + ": its copy in " + item.dataset.via +
                        " is gone since the job was submitted (purged or removed" +
                        (copy.problem.empty() ? "" : ": " + copy.problem) +
                        "): submit the job again, and a mover job copies it again");
        item.via = *config.find_tier(item.dataset.via);  // look_at_via_copy found its record there
        item.via_unpacked = item.dataset.mode == Mode::Extract;
        item.via_path = copy.record->ready.path;
        if (item.tier.name == item.dataset.via)
            item.copy_only = true;
        else
            item.dataset = policy::second_hop(item.dataset, copy.record->ready.path);
    }
    return items;
}

}  // namespace dlstage::mover
