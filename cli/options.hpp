// Options of the `dlstage` subcommands, parsed the standard way (as Slurm's
// own commands parse theirs): getopt_long, so "-o X", "-oX", "--format X",
// "--format=X", bundled flags ("-ha"), any unique abbreviation of a long
// option ("--form"), options before or after operands, and "--" to end
// them.  A mistake is one line, with a did-you-mean where one is close
// (lib/strings did_you_mean).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/strings.hpp"

namespace dlstage::cli {

struct OptionSpec {
    const char* long_name;  // "format"
    char short_name;        // 'o', or 0 for none
    bool takes_value;
};

struct ParsedArgs {
    // Each option given, in order: its long name and value ("" for a flag).
    std::vector<std::pair<std::string, std::string>> given;
    std::vector<std::string> operands;

    bool has(const std::string& long_name) const;
    std::optional<std::string> last(const std::string& long_name) const;  // the last value given
    std::vector<std::string> all(const std::string& long_name) const;     // every value given
};

// A usage error's one line (without "dlstage: ").
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Parses args (what follows the subcommand's name).  Throws UsageError.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& specs);

}  // namespace dlstage::cli
