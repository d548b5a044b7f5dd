// Which settings each kind of tier takes (dlstage.toml(5)): whether its
// copies are per job or per user (the path's placeholders), and the keys
// only some kinds have.  config/config asks each where it reads the key
// and reports a refusal at that key; a new kind of tier answers here (what
// the kind is: facts/config_model's Tier).
#pragma once

#include <string>
#include <vector>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// placement = "split": only a node tier splits datasets.
Verdict placement_fits_kind(const Tier& tier);

// Any of purge_days, purge_by, warn_days and refresh_on_use: for a file
// system the site purges.
Verdict purge_fits_kind(const Tier& tier);

// high_watermark or low_watermark: for a tier whose entries are evicted.
Verdict watermarks_fit_kind(const Tier& tier);

// charge_memory = true: for a tier in node memory.
Verdict charge_memory_fits_kind(const Tier& tier);

// The path's placeholders, and the cleanup, against the kind: each problem
// with the key it belongs to ("path" or "cleanup"; either is reported at
// the path's line), in the order check-config lists them.
struct KeyProblem {
    std::string key;
    std::string message;
};
std::vector<KeyProblem> path_fits_kind(const Tier& tier);

}  // namespace dlstage::policy
