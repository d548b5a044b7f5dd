// dlstage check-config [FILE]: every problem of a configuration file, one
// per line, so an admin fixes them all in one pass.
#include <iostream>

#include "cli/commands.hpp"
#include "lib/config.hpp"
#include "lib/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage check-config [FILE]\n"
                 "Check a dlstage configuration file (default: the one dlstage uses) and print\n"
                 "every problem as FILE:LINE: KEY: MESSAGE.  The file, and every directory\n"
                 "above it, must be owned by root and writable by nobody else: the plugin's\n"
                 "root code refuses it otherwise.  Exit 0 if it is valid, 1 if not.\n";
}
}  // namespace

int cmd_check_config(const GlobalOptions& options, const std::vector<std::string>& args)
{
    std::string file;
    for (const std::string& arg : args) {
        if (arg == "-h" || arg == "--help") {
            print_help();
            return kExitOk;
        }
        if (!arg.empty() && arg[0] == '-')
            return usage_error("check-config: unknown option '" + arg + "'", "check-config");
        if (!file.empty())
            return usage_error("check-config takes at most one FILE", "check-config");
        file = arg;
    }
    if (file.empty())
        file = choose_config_path(options.config_path, true);
    try {
        const Config config = load_trusted_config(file);
        std::cout << file << ": OK (" << config.tiers.size() << " tiers, " << config.datasets.size()
                  << " datasets)\n";
        return kExitOk;
    } catch (const ConfigError& e) {
        for (const ConfigProblem& problem : e.problems())
            say(problem.str());
        std::cerr << file << ": " << e.problems().size() << (e.problems().size() == 1 ? " problem" : " problems")
                  << "\n";
    } catch (const Error& e) {
        say(e.what());
    }
    return kExitFailure;
}

}  // namespace dlstage::cli
