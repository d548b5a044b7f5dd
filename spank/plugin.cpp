// The SPANK entry points: a thin extern "C" shim.  Each callback catches
// everything (no exception may cross into slurmd, slurmstepd or the
// clients) and forwards to the file of its context:
//   submit.cpp         allocator and local context: check the request (sbatch, salloc, srun)
//   prolog_epilog.cpp  job_script context: job_prolog / job_epilog (slurmd, root, every node)
//   srun.cpp           local context: an srun that created its job stages (as the user)
//   slurmstepd.cpp     remote context: the batch step stages; every task gets DLSTAGE_<NAME>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "policies/slurm_version.hpp"
#include "spank/plugin_args.hpp"
#include "spank/prolog_epilog.hpp"
#include "spank/slurm_spank_api.hpp"
#include "spank/slurmstepd.hpp"
#include "spank/srun.hpp"
#include "spank/submit.hpp"
#include "spank/wait_for_mover.hpp"

namespace {
// Every callback gets the plugstack.conf arguments; parse them there rather
// than once in init: slurmd does not call slurm_spank_init before
// job_prolog/job_epilog.
dlstage::spank::PluginArgs plugin_args(int ac, char** av)
{
    return dlstage::spank::parse_plugin_args(std::vector<std::string>(av, av + ac));
}

template <typename Fn>
int guarded(const char* callback, Fn&& fn) noexcept
{
    try {
        return fn();
    } catch (const std::exception& e) {
        // what() may carry a name a user chose: never a forged log line.
        slurm_error("%s", dlstage::message_line(std::string(callback) + ": " + e.what()).c_str());
    } catch (...) {
        slurm_error("%s", dlstage::message_line(std::string(callback) + ": unexpected failure").c_str());
    }
    return -1;
}

// srun inside an existing job (sbatch, salloc) must not stage again: only an
// srun that creates its job does.  Decided at init, before srun allocates.
bool g_inside_allocation = false;

bool is_client()
{
    const spank_context_t ctx = spank_context();
    return ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR;
}
}  // namespace

extern "C" {

// The SPANK_PLUGIN() macro gives these internal linkage under C++.
extern const char plugin_name[] = "dlstage";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av)
{
    return guarded("init", [&] {
        plugin_args(ac, av);  // refuse a bad plugstack.conf line at once, in every process
        // Built for one Slurm release: in another one it refuses to load,
        // with a line naming both (policies/slurm_version).
        char* running = nullptr;
        if (spank_get_item(sp, S_SLURM_VERSION, &running) == ESPANK_SUCCESS && running) {
            const dlstage::policy::Verdict fits =
                dlstage::policy::plugin_fits_slurm(dlstage::policy::version_text(SLURM_VERSION_NUMBER), running);
            if (!fits.allowed) {
                slurm_error("%s", dlstage::message_line(fits.reason).c_str());
                return -1;
            }
        }
        if (spank_context() == S_CTX_LOCAL)
            g_inside_allocation = std::getenv(dlstage::kJobIdVar) != nullptr;
        // Registered in every context: sbatch and salloc only learn of the
        // option this way, and remote/job_script contexts need it
        // registered to read its value back.  slurmd context has no
        // options; a refusal there is expected.
        const spank_err_t rc = spank_option_register(sp, dlstage::spank::stage_data_option_entry());
        if (rc != ESPANK_SUCCESS && spank_context() != S_CTX_SLURMD) {
            slurm_error("%s", dlstage::message_line(std::string("cannot register --stage-data: ") + spank_strerror(rc))
                                  .c_str());
            return -1;
        }
        return 0;
    });
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av)
{
    return guarded("init_post_opt", [&] {
        if (!is_client())
            return 0;
        dlstage::spank::SlurmSpankApi api(sp);
        return dlstage::spank::validate_submission(api, plugin_args(ac, av));
    });
}

int slurm_spank_job_prolog(spank_t sp, int ac, char** av)
{
    return guarded("job_prolog", [&] {
        dlstage::spank::SlurmSpankApi api(sp);
        return dlstage::spank::job_prolog(api, plugin_args(ac, av));
    });
}

int slurm_spank_local_user_init(spank_t sp, int ac, char** av)
{
    return guarded("local_user_init", [&] {
        dlstage::spank::SlurmSpankApi api(sp);
        return dlstage::spank::local_user_init(api, plugin_args(ac, av), g_inside_allocation);
    });
}

int slurm_spank_task_init(spank_t sp, int ac, char** av)
{
    return guarded("task_init", [&] {
        dlstage::spank::SlurmSpankApi api(sp);
        return dlstage::spank::task_init(api, plugin_args(ac, av));
    });
}

// The clients' end (sbatch, salloc, srun: Slurm calls it at their exit,
// after a refused submission too): mover jobs submitted for nothing go.
int slurm_spank_exit(spank_t sp, int, char**)
{
    return guarded("exit", [&] {
        if (!is_client())
            return 0;
        dlstage::spank::SlurmSpankApi api(sp);
        dlstage::spank::settle_movers(api);
        return 0;
    });
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av)
{
    return guarded("job_epilog", [&] {
        dlstage::spank::SlurmSpankApi api(sp);
        return dlstage::spank::job_epilog(api, plugin_args(ac, av));
    });
}

}  // extern "C"
