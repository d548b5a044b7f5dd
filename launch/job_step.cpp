#include "launch/job_step.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

#ifndef DLSTAGE_BINDIR
#define DLSTAGE_BINDIR ""
#endif
#ifndef DLSTAGE_PKGLIBEXECDIR
#define DLSTAGE_PKGLIBEXECDIR ""
#endif

namespace dlstage::launch {

std::vector<std::string> job_step_command(const Config& config, const std::string& job_id, const std::string& nodes,
                                          const std::string& step_name, OnTaskFailure on_failure, StepProgram program)
{
    std::vector<std::string> argv;
    for (const std::string& word : split(trim(config.site.launcher), ' '))
        if (!word.empty() && !(program == StepProgram::NotMpi && starts_with(word, "--mpi=")))
            argv.push_back(word);
    if (program == StepProgram::NotMpi)
        argv.push_back("--mpi=none");
    argv.insert(argv.end(), {"--jobid=" + job_id, "--nodes=" + nodes, "--ntasks=" + nodes,
                             on_failure == OnTaskFailure::StopStep ? "--kill-on-bad-exit=1" : "--kill-on-bad-exit=0",
                             "--job-name=" + step_name});
    // A task stopped after the others ended (they passed the stager's last
    // barrier and MPI_Finalize) would hold the step for ever: srun ends it
    // once the stall bound has passed since the first task ended.
    if (on_failure == OnTaskFailure::StopStep && config.site.stall_timeout > 0)
        argv.push_back("--wait=" + std::to_string(config.site.stall_timeout));
    return argv;
}

void set_step_environment()
{
    setenv(kStagerStepVar, "1", 1);
    if (const char* name = std::getenv("SLURM_JOB_NAME"))
        setenv(kJobNameVar, name, 1);
    if (const char* yield = std::getenv("OMPI_MCA_mpi_yield_when_idle"); !yield || !*yield)
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
}

namespace {

std::string own_directory()
{
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        throw_cannot("find", "the dlstage executable", errno);
    const std::string exe(self, static_cast<std::size_t>(n));
    return exe.substr(0, exe.rfind('/'));
}

// dir is absolute, so a match of its last characters starts at a '/'.
bool ends_with_directory(const std::string& path, const std::string& dir)
{
    return starts_with(dir, "/") && ends_with(path, dir);
}

}  // namespace

std::string sibling_program(const std::string& name)
{
    return own_directory() + "/" + name;
}

std::string helper_program_path(const std::string& exe_dir, const std::string& bindir, const std::string& pkglibexecdir,
                                const std::string& name)
{
    if (!pkglibexecdir.empty() && ends_with_directory(exe_dir, bindir)) {
        const std::string destdir = exe_dir.substr(0, exe_dir.size() - bindir.size());
        return destdir + pkglibexecdir + "/" + name;
    }
    return exe_dir + "/" + name;
}

std::string helper_program(const std::string& name)
{
    return helper_program_path(own_directory(), DLSTAGE_BINDIR, DLSTAGE_PKGLIBEXECDIR, name);
}

}  // namespace dlstage::launch
