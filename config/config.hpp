// The site configuration (dlstage.toml) read and checked: one loader for
// the plugin, the stager and the command.  The types it fills are
// facts/config_model's.
#pragma once

#include <string>
#include <string_view>

#include "facts/config_model.hpp"

namespace dlstage {

// Parse and check a whole configuration.  Throws ConfigError with every
// problem found (file, line, key), or Error if the file cannot be read or is
// not a regular file of at most 16 MiB (a directory, a fifo: never blocks).
Config load_config(const std::string& path);
Config parse_config(std::string_view text, const std::string& source_name);

}  // namespace dlstage
