// The mount holder on one node (`dlstage hold-mounts`, a task of the holder
// step; see holder_step.hpp for why a step): squashfuse servers for the
// staged images, ready markers, and unmounting when the step ends.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/stage_spec.hpp"

namespace dlstage::mounts {

// The datasets of spec in mode = "mount".
std::vector<StageItem> mount_items(const Config& config, const std::string& spec);

// Mounts each image of spec's mount datasets staged for job job_id on this
// node, prints kMountedLine (lib/contract.hpp), and holds the mounts until SIGTERM, SIGINT or
// SIGHUP (or until every server has ended).  Its exit status.
int hold_mounts(const Config& config, const std::string& job_id, const std::string& spec);

}  // namespace dlstage::mounts
