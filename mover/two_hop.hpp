// The stage request as a job's nodes carry it out (two-hop staging): a
// job off the mover partition never touches a reach = "mover" dataset's
// source.  To the via tier itself it only checks the mover job's copy
// (copy_only); to any other tier it stages from that copy
// (policies/two_hop: second_hop).  Used by the stager on every node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "facts/stage_item.hpp"

namespace dlstage::mover {

// Throws Error when a copy hop 2 needs is gone (purged or removed since
// the job was submitted), with what to do.
std::vector<StageItem> as_staged_here(const Config& config, std::vector<StageItem> items,
                                      const std::optional<std::string>& partition, const std::string& user);

}  // namespace dlstage::mover
