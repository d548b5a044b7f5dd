#include "spank/slurm_spank_api.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/sys/process.hpp"
#include "policies/slurm_version.hpp"

extern char** environ;

namespace dlstage::spank {

namespace {
std::optional<std::string> g_stage_data;  // set by the option callback

int on_stage_data(int /*val*/, const char* optarg, int /*remote*/)
{
    remember_stage_data(optarg);
    return 0;
}

// Slurm keeps pointers to these strings, and wants them non-const.
char g_name[] = "stage-data";
char g_arginfo[] = "NAME[:TIER][,...]";
char g_usage[] = "Stage datasets to fast node-local storage before the job starts. NAME is a dataset "
                 "from 'dlstage catalog list' or an absolute path; TIER is a storage tier such as shm "
                 "or ssd (default: the dataset's first tier). The job sees DLSTAGE_<NAME>.";
struct spank_option g_option = {g_name, g_arginfo, g_usage, 1, 0, on_stage_data};
}  // namespace

struct spank_option* stage_data_option_entry()
{
    return &g_option;
}

void remember_stage_data(const char* value)
{
    g_stage_data = value ? value : "";
}

// SPANK gives plugins no other option of the job.  But sbatch, salloc and
// srun export their parsed options (the global `opt`, Slurm's slurm_opt_t)
// and libslurmfull exports slurm_option_get(opt, name), which returns the
// option as text (xmalloc'd, freed with slurm_xfree).  Only these three
// names and a pointer are used, never the struct's layout; where any is
// missing (another Slurm), nothing is known and the node decides.
std::optional<std::string> SlurmSpankApi::client_option(const std::string& name)
{
    if (spank_context() != S_CTX_ALLOCATOR && spank_context() != S_CTX_LOCAL)
        return std::nullopt;
    // Only in a Slurm release where these were read and tested.
    if (!policy::client_options_checked(policy::release_of(policy::version_text(SLURM_VERSION_NUMBER))))
        return std::nullopt;
    using OptionGet = char* (*)(void*, const char*);
    using XFree = void (*)(void**);
    void* opt = dlsym(RTLD_DEFAULT, "opt");
    const auto get = reinterpret_cast<OptionGet>(dlsym(RTLD_DEFAULT, "slurm_option_get"));
    const auto xfree = reinterpret_cast<XFree>(dlsym(RTLD_DEFAULT, "slurm_xfree"));
    if (!opt || !get || !xfree)
        return std::nullopt;
    char* value = get(opt, name.c_str());
    if (!value)
        return std::nullopt;
    std::string text = value;
    xfree(reinterpret_cast<void**>(&value));
    if (text.empty())
        return std::nullopt;
    return text;
}

// slurm_option_set (src/common/slurm_opt.c, 22.05) changes the client's
// global `opt` as the command line would: what slurm_opt_create_job_desc
// then sends.  Its set function for an option another client owns returns
// an error, as does a value the option refuses.
bool SlurmSpankApi::set_client_option(const std::string& name, const std::string& value)
{
    if (spank_context() != S_CTX_ALLOCATOR && spank_context() != S_CTX_LOCAL)
        return false;
    if (!policy::client_options_checked(policy::release_of(policy::version_text(SLURM_VERSION_NUMBER))))
        return false;
    using OptionSet = int (*)(void*, const char*, const char*, bool);
    void* opt = dlsym(RTLD_DEFAULT, "opt");
    const auto set = reinterpret_cast<OptionSet>(dlsym(RTLD_DEFAULT, "slurm_option_set"));
    if (!opt || !set)
        return false;
    return set(opt, name.c_str(), value.c_str(), false) == 0;
}

Context SlurmSpankApi::context() const
{
    switch (spank_context()) {
    case S_CTX_LOCAL: return Context::Local;
    case S_CTX_REMOTE: return Context::Remote;
    case S_CTX_ALLOCATOR: return Context::Allocator;
    case S_CTX_SLURMD: return Context::Slurmd;
    case S_CTX_JOB_SCRIPT: return Context::JobScript;
    default: return Context::Unknown;
    }
}

std::optional<std::string> SlurmSpankApi::stage_data_option()
{
    if (g_stage_data)
        return g_stage_data;
    // Remote and job_script contexts: the value travels from the client in
    // the SPANK_ environment; getopt reads it back.
    char* value = nullptr;
    if (spank_option_getopt(handle_, &g_option, &value) == ESPANK_SUCCESS && value)
        return std::string(value);
    return std::nullopt;
}

std::optional<std::uint32_t> SlurmSpankApi::job_id()
{
    uint32_t id = 0;
    if (spank_get_item(handle_, S_JOB_ID, &id) != ESPANK_SUCCESS)
        return std::nullopt;
    return id;
}

std::optional<std::uint32_t> SlurmSpankApi::job_uid()
{
    uid_t uid = 0;
    if (spank_get_item(handle_, S_JOB_UID, &uid) != ESPANK_SUCCESS)
        return std::nullopt;
    return static_cast<std::uint32_t>(uid);
}

std::optional<std::uint32_t> SlurmSpankApi::job_gid()
{
    gid_t gid = 0;
    if (spank_get_item(handle_, S_JOB_GID, &gid) != ESPANK_SUCCESS)
        return std::nullopt;
    return static_cast<std::uint32_t>(gid);
}

std::optional<std::uint32_t> SlurmSpankApi::job_nnodes()
{
    uint32_t nnodes = 0;
    if (spank_get_item(handle_, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS)
        return std::nullopt;
    return nnodes;
}

bool SlurmSpankApi::is_batch_step()
{
    uint32_t step = 0;
    return spank_get_item(handle_, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step == SLURM_BATCH_SCRIPT;
}

std::string SlurmSpankApi::getenv(const std::string& name)
{
    if (spank_context() == S_CTX_REMOTE) {
        char value[4096];
        if (spank_getenv(handle_, name.c_str(), value, sizeof value) == ESPANK_SUCCESS)
            return value;
        return "";
    }
    // job_script context has no job environment to ask: slurmd passes the
    // job's facts in the prolog's own environment.
    const char* value = std::getenv(name.c_str());
    return value ? value : "";
}

std::vector<std::string> SlurmSpankApi::job_env()
{
    char** env = nullptr;
    if (spank_context() == S_CTX_LOCAL)
        env = environ;  // srun's own: what its tasks inherit
    else if (spank_get_item(handle_, S_JOB_ENV, &env) != ESPANK_SUCCESS)
        env = nullptr;
    std::vector<std::string> out;
    for (char** e = env; e && *e; ++e)
        out.emplace_back(*e);
    return out;
}

bool SlurmSpankApi::setenv(const std::string& name, const std::string& value)
{
    return spank_setenv(handle_, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS;
}

bool SlurmSpankApi::unsetenv(const std::string& name)
{
    return spank_unsetenv(handle_, name.c_str()) == ESPANK_SUCCESS;
}

bool SlurmSpankApi::job_control_setenv(const std::string& name, const std::string& value)
{
    return spank_job_control_setenv(handle_, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS;
}

int SlurmSpankApi::run(const std::vector<std::string>& argv, const std::vector<std::string>& env)
{
    try {
        return shell_exit_code(wait_for(spawn(argv, SpawnIo{}, &env), argv.at(0)));
    } catch (const Error&) {
        return -1;  // it could not be started
    }
}

bool SlurmSpankApi::start(const std::vector<std::string>& argv)
{
    try {
        const Fd null_in = open_dev_null(O_RDONLY);
        SpawnIo io;
        io.in = null_in.get();
        // The program goes on detached (lib/sys/process's continue_detached):
        // what we started exits at once, and is reaped here.
        return exited_ok(wait_for(spawn(argv, io), argv.at(0)));
    } catch (const Error&) {
        return false;
    }
}

// Messages carry names users chose (paths, dataset names, user names): a
// newline in one must not forge a line of slurmd's log.
void SlurmSpankApi::error(const std::string& message)
{
    slurm_error("%s", message_line(message).c_str());
}

void SlurmSpankApi::info(const std::string& message)
{
    slurm_info("%s", message_line(message).c_str());
}

// A client sets its log level from -v only after its plugins'
// init_post_opt, where slurm_verbose() still drops the line: there the
// option's count decides.
void SlurmSpankApi::verbose(const std::string& message)
{
    if (context() == Context::Local || context() == Context::Allocator) {
        const std::optional<std::string> count = client_option("verbose");
        if (count && !count->empty() && *count != "0")
            slurm_info("%s", message_line(message).c_str());
        return;
    }
    slurm_verbose("%s", message_line(message).c_str());
}

void SlurmSpankApi::print(const std::string& text)
{
    std::fputs(text.c_str(), stdout);
}

void SlurmSpankApi::end_client(int status)
{
    std::fflush(stdout);
    std::exit(status);  // as sbatch ends itself after --gres=help
}

}  // namespace dlstage::spank
