// The seam between the plugin's logic and Slurm's SPANK calls.
//
// plugin.cpp hands the context files a SpankApi backed by the real spank_*
// functions (slurm_spank_api.cpp); unit tests hand them a fake.  The
// context code therefore never includes <slurm/spank.h>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlstage::spank {

enum class Context { Local, Remote, Allocator, Slurmd, JobScript, Unknown };

class SpankApi {
public:
    virtual ~SpankApi() = default;

    virtual Context context() const = 0;

    // The value of --stage-data, or nothing when the job did not ask.
    virtual std::optional<std::string> stage_data_option() = 0;

    virtual std::optional<std::uint32_t> job_id() = 0;
    virtual std::optional<std::uint32_t> job_uid() = 0;
    virtual std::optional<std::uint32_t> job_gid() = 0;
    virtual std::optional<std::uint32_t> job_nnodes() = 0;
    virtual bool is_batch_step() = 0;  // remote context: the step running the batch script

    // A variable of the job's environment in remote context (slurmstepd);
    // of the process environment elsewhere (job_script: SLURMD_NODENAME,
    // SLURM_JOB_USER, SPANK_*; clients: the user's shell).  "" when unset.
    virtual std::string getenv(const std::string& name) = 0;

    // The environment the job's tasks start from (NAME=value entries):
    // remote context, the job environment slurmstepd holds; local context,
    // srun's own, which its tasks inherit.  Remote context: setting a
    // variable in it for the task about to start.
    virtual std::vector<std::string> job_env() = 0;
    virtual bool setenv(const std::string& name, const std::string& value) = 0;
    virtual bool unsetenv(const std::string& name) = 0;

    // Client side (sbatch, salloc, srun): one of the job's own options
    // ("partition", "account", "mem") as Slurm's option parser left it:
    // command line, #SBATCH lines and SBATCH_*/SALLOC_*/SLURM_* input
    // variables.  Nothing when not given, or when this Slurm does not let a
    // plugin ask (the node then decides alone).
    virtual std::optional<std::string> client_option(const std::string& name) = 0;
    // Client side, before the job is sent: sets one of the job's own
    // options ("dependency", "comment") as if the user had given it.
    // False when Slurm refused the value, the option is not this client's
    // (kill-on-invalid-dep is sbatch's), or this Slurm does not let a
    // plugin set it.
    virtual bool set_client_option(const std::string& name, const std::string& value) = 0;

    // Client side: a variable that reaches job_prolog/job_epilog as
    // SPANK_<name> (how submit-time facts travel to the nodes).
    virtual bool job_control_setenv(const std::string& name, const std::string& value) = 0;

    // Runs a command (no shell) with exactly this environment and waits;
    // its output goes where the caller's goes.  The exit status, 128+signal
    // if killed, -1 if it could not start.
    virtual int run(const std::vector<std::string>& argv, const std::vector<std::string>& env) = 0;

    // The client only: starts a command beside it, in our environment and
    // process group (Ctrl-C reaches both), stdin from /dev/null, and waits
    // only for the process it starts to detach (continue_detached) and exit.
    // False when it could not be started or did not detach.
    virtual bool start(const std::vector<std::string>& argv) = 0;

    // Logging; the "dlstage: " prefix is added here.  In the client this
    // is what the user reads; in slurmd it goes to the slurmd log.
    virtual void error(const std::string& message) = 0;
    virtual void info(const std::string& message) = 0;
    // Only with the command's -v (Slurm's verbose level): why something
    // the user might expect did not happen.
    virtual void verbose(const std::string& message) = 0;

    // The client only (sbatch, srun, salloc): text for the user's terminal
    // as it is (no prefix), and the end of the command with nothing
    // submitted, as --gres=help ends it.
    virtual void print(const std::string& text) = 0;
    virtual void end_client(int status) = 0;
};

}  // namespace dlstage::spank
