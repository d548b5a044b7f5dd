#include "lib/sys/sys_error.hpp"

#include <cstring>

#include "lib/error.hpp"

namespace dlstage {

std::string cannot(const std::string& action, const std::string& thing, int err)
{
    return "cannot " + action + (thing.empty() ? "" : " " + thing) + ": " + std::strerror(err);
}

void throw_cannot(const std::string& action, const std::string& thing, int err)
{
    throw Error(cannot(action, thing, err));
}

}  // namespace dlstage
