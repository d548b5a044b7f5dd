#include "policies/slurm_version.hpp"

#include <cstdio>

namespace dlstage::policy {

std::string version_text(unsigned number)
{
    char text[32];
    std::snprintf(text, sizeof text, "%u.%02u.%u", (number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff);
    return text;
}

SlurmRelease release_of(const std::string& version)
{
    SlurmRelease r;
    unsigned major = 0, minor = 0;
    if (std::sscanf(version.c_str(), "%u.%u", &major, &minor) == 2)
        r = {major, minor};
    return r;
}

Verdict plugin_fits_slurm(const std::string& built, const std::string& running)
{
    const SlurmRelease b = release_of(built), r = release_of(running);
    if (r.major == 0)
        return Verdict::allow("the running Slurm did not say its version; dlstage was built for " + built);
    if (b.major == r.major && b.minor == r.minor)
        return Verdict::allow("built for Slurm " + built + ", running in " + running);
    return Verdict::refuse("dlstage.so was built for Slurm " + built + " but is loaded into Slurm " + running +
                           ": rebuild and reinstall dlstage against Slurm " + running +
                           " (see spank-dlstage(8), Slurm versions)");
}

bool client_options_checked(const SlurmRelease& built)
{
    // Read in Slurm 22.05's src/common/slurm_opt.c (Debian 12: 22.05.8) and
    // exercised by the integration tests; other releases are not checked.
    return built.major == 22 && built.minor == 5;
}

}  // namespace dlstage::policy
