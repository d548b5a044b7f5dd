// Which Slurm the plugin may run in.  A SPANK plugin is compiled against
// one Slurm's headers: structures, item numbers and the internal symbols
// it looks up (slurm_option_get) may change with each major.minor release,
// so the plugin refuses to load into another one, with a line naming both
// (the fix: rebuild dlstage against the running Slurm).
#pragma once

#include <string>

#include "policies/verdict.hpp"

namespace dlstage::policy {

struct SlurmRelease {
    unsigned major = 0, minor = 0;
};

// SLURM_VERSION_NUMBER (0x160508) as Slurm writes it: "22.05.8".
std::string version_text(unsigned number);

// "22.05.8" -> {22, 5}; nothing-known as {0, 0}.
SlurmRelease release_of(const std::string& version);

// Allowed when the running Slurm (`running`, as S_SLURM_VERSION says it)
// is the release the plugin was built for (`built`, e.g. "22.05.8").
Verdict plugin_fits_slurm(const std::string& built, const std::string& running);

// Whether sbatch/srun/salloc's internal option table (slurm_option_get on
// the global `opt`) was checked for this release: only then does the
// submit side ask it for the partition, account and memory.
bool client_options_checked(const SlurmRelease& built);

}  // namespace dlstage::policy
