// Arguments on the plugin's plugstack.conf line, strictly key=value:
//
//   required /usr/lib/x86_64-linux-gnu/slurm-wlm/dlstage.so config=/etc/dlstage/dlstage.toml
//            [dlstage=/usr/bin/dlstage]
//
// An unknown key or a malformed argument is an error, so an admin's typo
// does not silently fall back to a default.
#pragma once

#include <string>
#include <vector>

namespace dlstage::spank {

struct PluginArgs {
    std::string config_path;                            // "" means the built-in default
    std::string dlstage_path = default_dlstage_path();  // the command that stages

    static std::string default_dlstage_path();  // $bindir/dlstage, fixed at build time
};

// Throws dlstage::Error naming the bad argument.
PluginArgs parse_plugin_args(const std::vector<std::string>& args);

}  // namespace dlstage::spank
