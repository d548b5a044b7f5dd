// Starting dlstage's own job steps (the stager, the mount holder) through
// the site's launcher, one task per node of the job.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace dlstage::launch {

// What happens to the other tasks of the step when one exits non-zero.
enum class OnTaskFailure {
    StopStep,    // srun --kill-on-bad-exit=1 --wait=site.stall_timeout: nothing waits on a lost rank
    KeepOthers,  // --kill-on-bad-exit=0: the caller decides (and stops it gently)
};

// Whether the step's program is an MPI program: if not, srun is told
// --mpi=none (whatever site.launcher says) and sets up no MPI plugin.
enum class StepProgram { Mpi, NotMpi };

// site.launcher's words plus what makes it one task on every node of job
// job_id, whatever the job's own --ntasks or --cpus-per-task say, with the
// step named step_name (as sacct shows it).  The program and its arguments
// go after.
std::vector<std::string> job_step_command(const Config& config, const std::string& job_id, const std::string& nodes,
                                          const std::string& step_name, OnTaskFailure on_failure, StepProgram program);

// The environment of dlstage's own steps, set in ours for the launcher to
// pass on: kStagerStepVar=1 (the plugin neither checks nor stages there
// again) and, unless set, OMPI_MCA_mpi_yield_when_idle=1 (on an
// oversubscribed node a waiting rank yields its core).
void set_step_environment();

// The path of an installed program next to this executable (the mount
// holder runs `dlstage` itself again).
std::string sibling_program(const std::string& name);

// Where a `dlstage` in exe_dir finds a helper program that is not for users'
// PATH (dlstage-stager): in pkglibexecdir under the same prefix as bindir,
// so that a DESTDIR or relocated install finds its own; beside it when
// exe_dir is not an installed bindir (a build tree).
std::string helper_program_path(const std::string& exe_dir, const std::string& bindir, const std::string& pkglibexecdir,
                                const std::string& name);

// helper_program_path for this executable and the configured directories.
std::string helper_program(const std::string& name);

}  // namespace dlstage::launch
