// Where the configuration lives: one answer for the plugin and the command.
#pragma once

#include <string>

#include "config/config.hpp"

namespace dlstage {

// $sysconfdir/dlstage/dlstage.toml, fixed at build time.
std::string default_config_path();

// The explicit path if given, else (when allow_env: the command honours
// them, root code in the plugin never does) $DLSTAGE_CONFIG, else the
// plugin's own config= as the job sees it ($SLURM_SPANK_DLSTAGE_CONFIG, so
// `dlstage stage` in salloc uses the plugin's file), else the default.
std::string choose_config_path(const std::string& explicit_path, bool allow_env);

// Why root code must not use the configuration file at path, or "" if it
// may.  The configuration tells root where to create and what to remove, so
// nobody but root may be able to change it: the file and every directory
// above it (and, for a symlink, above its target) must be owned by root (or
// by the caller, when the caller is not root) and writable by nobody else;
// a directory writable by others counts only with the sticky bit (/tmp),
// whose other users cannot rename what root owns in it.
std::string untrusted_config_reason(const std::string& path);
// The same rule for another file root code or a job believes (a dataset's
// manifest); noun names it in the reason ("manifest").
std::string untrusted_file_reason(const std::string& path, const char* noun);

// The configuration as the plugin and root commands use it: checked by
// untrusted_config_reason first.  Throws Error naming the file and the fix.
Config load_trusted_config(const std::string& path);

// What the command uses: load_trusted_config when run as root, else
// load_config (a user may try a configuration of their own).
Config load_config_for_caller(const std::string& path);

}  // namespace dlstage
