#include "lib/error.hpp"

#include "lib/strings.hpp"

namespace dlstage {

std::string ConfigProblem::str() const
{
    std::string out = file;
    if (line > 0)
        out += ":" + std::to_string(line);
    if (!key.empty())
        out += (out.empty() ? "" : ": ") + key;
    out += (out.empty() ? "" : ": ") + message;
    return printable(out);  // keys and parser messages may hold any byte
}

namespace {
std::string summary(const std::vector<ConfigProblem>& problems)
{
    if (problems.empty())
        return "invalid configuration";
    std::string text = problems.front().str();
    if (problems.size() > 1)
        text += " (and " + std::to_string(problems.size() - 1) + " more: run 'dlstage check-config')";
    return text;
}
}  // namespace

ConfigError::ConfigError(std::vector<ConfigProblem> problems) : Error(summary(problems)), problems_(std::move(problems))
{
}

}  // namespace dlstage
