// At submit: a warning when the user's copy of a dataset in a shared tier
// will soon be purged by the site (policies/purge.hpp).  Never a refusal:
// a purged copy is staged again by the job.
#pragma once

#include <string>

#include "config/stage_spec.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

void warn_of_purge(SpankApi& api, const StageItem& item, const std::string& user);

}  // namespace dlstage::spank
