#include "lib/config_paths.hpp"

#include <cstdlib>

#ifndef DLSTAGE_SYSCONFDIR
#define DLSTAGE_SYSCONFDIR "/etc"
#endif

namespace dlstage {

std::string default_config_path()
{
    return std::string(DLSTAGE_SYSCONFDIR) + "/dlstage/dlstage.toml";
}

std::string choose_config_path(const std::string& explicit_path, bool allow_env)
{
    if (!explicit_path.empty())
        return explicit_path;
    if (allow_env) {
        for (const char* name : {"DLSTAGE_CONFIG", "SLURM_SPANK_DLSTAGE_CONFIG"}) {
            const char* env = std::getenv(name);
            if (env && *env)
                return env;
        }
    }
    return default_config_path();
}

}  // namespace dlstage
