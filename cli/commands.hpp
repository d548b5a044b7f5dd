// The `dlstage` command: one function per subcommand, sharing the core
// library with the plugin.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

#include "config/config.hpp"

namespace dlstage {
struct Config;
}

namespace dlstage::cli {

enum ExitCode { kExitOk = 0, kExitFailure = 1, kExitUsage = 2 };

struct GlobalOptions {
    std::string config_path;  // from --config; "" means $DLSTAGE_CONFIG or the default
};

int cmd_check_config(const GlobalOptions& options, const std::vector<std::string>& args);
int cmd_catalog(const GlobalOptions& options, const std::vector<std::string>& args);
int cmd_stage(const GlobalOptions& options, const std::vector<std::string>& args);
int cmd_status(const GlobalOptions& options, const std::vector<std::string>& args);
// status --dataset NAME (cli/status_copies.cpp); `jobs`, when given, goes
// into the JSON object as its "jobs" (the jobs staging the dataset now).
int print_copies(const Config& config, const std::string& dataset, bool json, const toml::array* jobs = nullptr);
// status --node NODE (cli/status_node.cpp)
int print_node(const Config& config, const std::string& node, bool json);
int cmd_pack(const GlobalOptions& options, const std::vector<std::string>& args);
int cmd_gc(const GlobalOptions& options, const std::vector<std::string>& args);
int cmd_prefetch(const GlobalOptions& options, const std::vector<std::string>& args);
// Internal: the mount holder on one node, started by stage as a job step.
int cmd_hold_mounts(const GlobalOptions& options, const std::vector<std::string>& args);
// Internal: beside a salloc or srun whose job waits for mover jobs.
int cmd_watch_movers(const GlobalOptions& options, const std::vector<std::string>& args);

// catalog scan / catalog show (args[0]), with the loaded configuration.
int cmd_catalog_manifest(const Config& config, const std::vector<std::string>& args);

// A usage error: the message, a pointer to --help, exit code 2.
int usage_error(const std::string& message, const std::string& command);

}  // namespace dlstage::cli
