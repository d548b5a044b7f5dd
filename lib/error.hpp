// Errors of the core library.
//
// Every message a user or admin sees is one line that names the thing and
// says what to do; the "dlstage: " prefix is added where the message leaves
// the program (stderr, slurm_error), never inside the text itself.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dlstage {

// A problem the user or admin can fix; what() is the one-line message.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// parse() with "NAME: " put before the message of an Error it throws, for
// values whose parser does not know their name:
// "DLSTAGE_WINDOW: invalid value '4x': expected a whole number from 1 to 256".
template <typename Parse>
auto naming(const std::string& name, Parse&& parse) -> decltype(parse())
{
    try {
        return parse();
    } catch (const Error& e) {
        throw Error(name + ": " + e.what());
    }
}

// One problem in a configuration file, located by file, line and key.
struct ConfigProblem {
    std::string file;
    int line = 0;     // 0: no line known (e.g. the file itself)
    std::string key;  // dotted key, e.g. "tiers.shm.scope"; may be empty
    std::string message;

    // "FILE:LINE: KEY: MESSAGE", leaving out the parts that are unknown; one
    // line (control bytes shown as \xNN).
    std::string str() const;
};

// All problems found in one configuration file (never empty).
class ConfigError : public Error {
public:
    explicit ConfigError(std::vector<ConfigProblem> problems);
    const std::vector<ConfigProblem>& problems() const { return problems_; }

private:
    std::vector<ConfigProblem> problems_;
};

}  // namespace dlstage
