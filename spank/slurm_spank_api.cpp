#include "spank/slurm_spank_api.hpp"

#include <cstdlib>

#include "lib/error.hpp"

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
char g_usage[] =
    "Stage datasets to fast node-local storage before the job starts. NAME is a dataset "
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

std::string SlurmSpankApi::getenv(const std::string& name)
{
    // job_script context has no job environment to ask: slurmd passes the
    // job's facts in the prolog's own environment.
    const char* value = std::getenv(name.c_str());
    return value ? value : "";
}

void SlurmSpankApi::error(const std::string& message)
{
    slurm_error("%s%s", kMessagePrefix, message.c_str());
}

void SlurmSpankApi::info(const std::string& message)
{
    slurm_info("%s%s", kMessagePrefix, message.c_str());
}

}  // namespace dlstage::spank
