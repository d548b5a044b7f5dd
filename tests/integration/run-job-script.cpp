// run-job-script PLUGIN prolog|epilog STAGE_DATA [PLUGIN_ARG...]
//
// Runs the installed plugin's slurm_spank_job_prolog or _epilog as slurmd
// does (a fresh process, as root, in the node's namespace), for the job
// named by SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_GID in the environment
// (SLURMD_NODENAME and SLURM_JOB_USER as slurmd sets them).  For the tests
// that need a job script run again by hand: the epilog run twice, or after
// a restart.  It provides the few SPANK calls the plugin makes in that
// context; the plugin's code is the one slurmd loads.  Prints the return
// code and exits 0 if it was 0.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

namespace {
std::string g_stage_data;

// spank.h's error codes are macros of plain ints in 22.05.
spank_err_t as_err(int code)
{
    return static_cast<spank_err_t>(code);
}

std::uint32_t env_number(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value) {
        std::fprintf(stderr, "run-job-script: %s is not set\n", name);
        std::exit(2);
    }
    return static_cast<std::uint32_t>(std::strtoul(value, nullptr, 10));
}

void log_line(const char* level, const char* format, va_list args)
{
    std::fprintf(stderr, "%s: ", level);
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
}
}  // namespace

extern "C" {

spank_context_t spank_context(void)
{
    return S_CTX_JOB_SCRIPT;
}

spank_err_t spank_get_item(spank_t, spank_item_t item, ...)
{
    va_list args;
    va_start(args, item);
    spank_err_t rc = as_err(ESPANK_SUCCESS);
    switch (item) {
    case S_JOB_ID: *va_arg(args, uint32_t*) = env_number("SLURM_JOB_ID"); break;
    case S_JOB_UID: *va_arg(args, uid_t*) = env_number("SLURM_JOB_UID"); break;
    case S_JOB_GID: *va_arg(args, gid_t*) = env_number("SLURM_JOB_GID"); break;
    default: rc = as_err(ESPANK_NOT_AVAIL);
    }
    va_end(args);
    return rc;
}

spank_err_t spank_option_getopt(spank_t, struct spank_option*, char** optarg)
{
    *optarg = g_stage_data.data();
    return as_err(ESPANK_SUCCESS);
}

spank_err_t spank_option_register(spank_t, struct spank_option*)
{
    return as_err(ESPANK_SUCCESS);
}

spank_err_t spank_getenv(spank_t, const char*, char*, int)
{
    return as_err(ESPANK_NOT_AVAIL);
}

spank_err_t spank_setenv(spank_t, const char*, const char*, int)
{
    return as_err(ESPANK_NOT_AVAIL);
}

spank_err_t spank_unsetenv(spank_t, const char*)
{
    return as_err(ESPANK_NOT_AVAIL);
}

spank_err_t spank_job_control_setenv(spank_t, const char*, const char*, int)
{
    return as_err(ESPANK_NOT_AVAIL);
}

const char* spank_strerror(spank_err_t)
{
    return "not available in run-job-script";
}

void slurm_error(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    log_line("error", format, args);
    va_end(args);
}

void slurm_info(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    log_line("info", format, args);
    va_end(args);
}

void slurm_verbose(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    log_line("verbose", format, args);
    va_end(args);
}

}  // extern "C"

int main(int argc, char** argv)
{
    if (argc < 4 || (std::strcmp(argv[2], "prolog") != 0 && std::strcmp(argv[2], "epilog") != 0)) {
        std::fprintf(stderr, "usage: run-job-script PLUGIN prolog|epilog STAGE_DATA [PLUGIN_ARG...]\n");
        return 2;
    }
    g_stage_data = argv[3];
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        std::fprintf(stderr, "run-job-script: %s\n", dlerror());
        return 2;
    }
    using Callback = int (*)(spank_t, int, char**);
    const std::string symbol = std::string("slurm_spank_job_") + argv[2];
    const auto callback = reinterpret_cast<Callback>(dlsym(plugin, symbol.c_str()));
    if (!callback) {
        std::fprintf(stderr, "run-job-script: %s has no %s\n", argv[1], symbol.c_str());
        return 2;
    }
    std::vector<char*> plugin_args(argv + 4, argv + argc);
    const int rc = callback(nullptr, static_cast<int>(plugin_args.size()), plugin_args.data());
    std::printf("%s returned %d\n", symbol.c_str(), rc);
    return rc == 0 ? 0 : 1;
}
