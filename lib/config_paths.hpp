// Where the configuration lives: one answer for the plugin and the command.
#pragma once

#include <string>

namespace dlstage {

// $sysconfdir/dlstage/dlstage.toml, fixed at build time.
std::string default_config_path();

// The explicit path if given, else $DLSTAGE_CONFIG when allow_env (the
// command honours it; root code in the plugin never does), else the default.
std::string choose_config_path(const std::string& explicit_path, bool allow_env);

}  // namespace dlstage
