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

#include <cstddef>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dlstage::mounts {

// Starts the holder step for the mount datasets of spec and waits until
// every one of `nodes` nodes reports its mounts.  Returns true (at once
// when spec holds no mount dataset), or prints why not (dlstage: ...) and
// returns false with the step stopped.
bool start_mount_holder(const Config& config, const std::string& config_path, const std::string& job_id,
                        const std::string& nodes, const std::string& spec);

// The holder step's command line: the launcher's step on every node (not
// an MPI program; a failing node does not get the others killed), sharing
// the job's resources (--overlap), running `dlstage hold-mounts`.
std::vector<std::string> holder_command(const Config& config, const std::string& config_path, const std::string& job_id,
                                        const std::string& nodes, const std::string& spec);

// How many nodes' holders have reported (kMountedLine) in the step's stdout.
std::size_t count_mounted_lines(const std::string& out);

}  // namespace dlstage::mounts
