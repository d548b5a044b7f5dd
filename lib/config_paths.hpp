// Where the configuration lives: one answer for the plugin and the command.
#pragma once

#include <string>

namespace dlstage {

// $sysconfdir/dlstage/dlstage.toml, fixed at build time.
std::string default_config_path();

// The explicit path if given, else (when allow_env: the command honours
// them, root code in the plugin never does) $DLSTAGE_CONFIG, else the
// plugin's own config= as the job sees it ($SLURM_SPANK_DLSTAGE_CONFIG, so
// `dlstage stage` in salloc uses the plugin's file), else the default.
std::string choose_config_path(const std::string& explicit_path, bool allow_env);

}  // namespace dlstage
