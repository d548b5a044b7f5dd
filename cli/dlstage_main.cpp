// dlstage: the command users and admins run on login and compute nodes.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "build-aux/config.h"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config_paths.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/strings.hpp"

namespace dlstage::cli {

namespace {
// The one usage line a usage error ends with, as each --help begins.
std::string synopsis(const std::string& command)
{
    static const std::vector<std::pair<std::string, std::string>> lines = {
        {"", "dlstage [-c FILE] COMMAND [ARGS...]"},
        {"check-config",
         "dlstage check-config [FILE] [--explain [--partition P] [--account A] [--user U] [--group G] [--json]]"},
        {"catalog", "dlstage catalog list [--json | --names] | scan NAME [--threads N] | show NAME [--json]"},
        {"stage", "dlstage stage [--quiet] [SPEC[,SPEC...]]..."},
        {"status", "dlstage status [-h] [-a] [-o FORMAT] [-j JOBS] [-u USERS] [-t STATES] [--json] [JOBID...] | --node "
                   "NODE | --dataset NAME"},
        {"pack",
         "dlstage pack [--format squashfs|tar] [--shards N | --shard-size SIZE] [--block-size SIZE] [--force] DIR OUT"},
        {"gc", "dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]"},
        {"prefetch", "dlstage prefetch NAME"},
    };
    for (const auto& [name, line] : lines)
        if (name == command)
            return line;
    return "dlstage " + command + " ...";
}
}  // namespace

int usage_error(const std::string& message, const std::string& command)
{
    say(message);
    std::cerr << "Usage: " << synopsis(command) << "  (see 'dlstage " << (command.empty() ? "" : command + " ")
              << "--help')\n";
    return kExitUsage;
}

namespace {
void print_help()
{
    std::cout << "Usage: dlstage [OPTIONS] COMMAND [ARGS...]\n"
                 "Stage deep-learning datasets to fast node-local storage for Slurm jobs.\n"
                 "\n"
                 "Commands:\n"
                 "  check-config [FILE]    check a configuration file and list every problem\n"
                 "                         (--explain: each tier key for a job, and its origin)\n"
                 "  catalog list [--json]  list the datasets that can be staged\n"
                 "  stage [SPEC...]        stage datasets to every node of the current job\n"
                 "  status [JOBID...]      show staging as squeue shows jobs (--node, --dataset)\n"
                 "  pack DIR OUT           pack a directory into a squashfs image or tar shards\n"
                 "  prefetch NAME          copy a dataset only mover nodes see to its shared tier\n"
                 "  gc [--dry-run]         remove what ended jobs left on this node (root)\n"
                 "\n"
                 "Options:\n"
                 "  -c, --config=FILE      configuration file (default: $DLSTAGE_CONFIG, else\n"
                 "                         "
              << default_config_path()
              << ")\n"
                 "  -h, --help             show this help and exit\n"
                 "  -V, --version          show the version and exit\n"
                 "\n"
                 "Jobs ask for data with: sbatch --stage-data=NAME[:TIER][,...] job.sh\n"
                 "Exit status: 0 success, 1 failure, 2 usage error.  See dlstage(1).\n";
}

using Command = int (*)(const GlobalOptions&, const std::vector<std::string>&);

struct CommandRow {
    std::string name;
    Command run;
    bool internal = false;  // not offered to users: started by another command
};

const std::vector<CommandRow>& commands()
{
    static const std::vector<CommandRow> table = {
        {"check-config", cmd_check_config},
        {"catalog", cmd_catalog},
        {"stage", cmd_stage},
        {"status", cmd_status},
        {"pack", cmd_pack},
        {"prefetch", cmd_prefetch},
        {"gc", cmd_gc},
        {kHoldMountsCommand, cmd_hold_mounts, true},    // started by stage
        {kWatchMoversCommand, cmd_watch_movers, true},  // started by salloc and srun
    };
    return table;
}

// The commands users may give, in the table's order.
std::vector<std::string> user_commands()
{
    std::vector<std::string> names;
    for (const CommandRow& row : commands())
        if (!row.internal)
            names.push_back(row.name);
    return names;
}

// "check-config, catalog, ...".
std::string command_list()
{
    return join(user_commands(), ", ");
}

// Takes -c/--config out of args (it may stand before or after the command,
// as with Slurm's commands).  Returns a usage message, or "".
std::string take_config_option(std::vector<std::string>& args, GlobalOptions& options)
{
    for (std::size_t i = 0; i < args.size();) {
        const std::string arg = args[i];
        if (arg == "--")
            break;
        if (arg == "-c" || arg == "--config") {
            if (i + 1 >= args.size() || args[i + 1].empty())
                return "option " + arg + " needs a FILE";
            options.config_path = args[i + 1];
            args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        } else if (arg.rfind("--config=", 0) == 0) {
            options.config_path = arg.substr(std::strlen("--config="));
            if (options.config_path.empty())
                return "option --config needs a FILE";
            args.erase(args.begin() + static_cast<long>(i));
        } else {
            ++i;
        }
    }
    return "";
}

int run(int argc, char** argv)
{
    GlobalOptions options;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (const std::string problem = take_config_option(args, options); !problem.empty())
        return usage_error(problem, "");
    if (args.empty())
        return usage_error("no command given", "");
    const std::string& first = args.front();
    if (first == "-h" || first == "--help") {
        print_help();
        return kExitOk;
    }
    if (first == "-V" || first == "--version") {
        std::cout << PACKAGE_NAME << " " << PACKAGE_VERSION << "\n";
        return kExitOk;
    }
    if (first[0] == '-')
        return usage_error("unknown option '" + first + "'" + did_you_mean(first, {"--config", "--help", "--version"}),
                           "");
    const auto command =
        std::find_if(commands().begin(), commands().end(), [&](const CommandRow& row) { return row.name == first; });
    if (command == commands().end())
        return usage_error("unknown command '" + first + "'" + did_you_mean(first, user_commands()) +
                               " (commands: " + command_list() + ")",
                           "");
    return command->run(options, std::vector<std::string>(args.begin() + 1, args.end()));
}
}  // namespace
}  // namespace dlstage::cli

int main(int argc, char** argv)
{
    try {
        return dlstage::cli::run(argc, argv);
    } catch (const std::exception& e) {
        dlstage::say(e.what());
        return dlstage::cli::kExitFailure;
    }
}
