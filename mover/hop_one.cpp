#include "mover/hop_one.hpp"

#include <ctime>

#include "dataset/source_probe.hpp"
#include "mover/via_copy.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

HopOne prepare_copy(const Config& config, const Dataset& dataset, const std::string& user)
{
    // The manifest's scan time only: the source is not looked at here.
    const std::int64_t scanned = probe_far_source(dataset, config.site.manifests()).manifest_scanned;
    const ViaCopy copy =
        look_at_via_copy(config, dataset, user, scanned, static_cast<std::int64_t>(std::time(nullptr)));
    const policy::Verdict usable = policy::via_copy_usable(copy.facts, dataset.via);
    HopOne hop;
    hop.copy_usable = usable.allowed;
    if (usable.allowed)
        return hop;
    hop.why = usable.reason;
    hop.job = ensure_mover(config, dataset, user);
    return hop;
}

}  // namespace dlstage::mover
