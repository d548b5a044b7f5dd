// squashfs datasets in mode = "mount": after the stager has put the image
// on every node, `dlstage stage` starts one more job step, the mount holder
// (`dlstage hold-mounts`, one task per node, srun --overlap).  On its node
// it mounts each image with squashfuse, as the user, and writes the ready
// marker; it then keeps the mounts for as long as the step lives.  Slurm
// stops the step at job end (SIGTERM): the holder unmounts; the epilog
// (root) detaches whatever a killed holder left.
//
// Why a step of its own: a FUSE server is a process, and under
// proctrack/cgroup every process of a step dies with the step, so neither
// the stager's step nor a daemon forked from it can hold a mount for the
// job.  Why squashfuse and not a loop mount by the plugin: data moves only
// as the user (root never reads dataset content), and a user-made image
// never reaches the kernel's squashfs driver.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "lib/config.hpp"

namespace dlstage::cli {

// Starts the holder step for the mount datasets of spec and waits until
// every one of `nodes` nodes reports its mounts.  Returns 0, or prints why
// not (dlstage: ...) and returns 1 with the step stopped.
int start_mount_holder(const Config& config, const std::string& config_path, const std::string& job_id,
                       const std::string& nodes, const std::string& spec);

// `dlstage hold-mounts --job ID SPEC`: the holder itself (internal).
int cmd_hold_mounts(const GlobalOptions& options, const std::vector<std::string>& args);

}  // namespace dlstage::cli
