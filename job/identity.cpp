#include "job/identity.hpp"

#include <cstdlib>
#include <pwd.h>
#include <unistd.h>

#include "lib/error.hpp"

namespace dlstage {

std::string this_node_name()
{
    if (const char* name = std::getenv("SLURMD_NODENAME"); name && *name)
        return name;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

std::string this_user_name()
{
    const passwd* pw = getpwuid(getuid());
    if (!pw)
        throw Error("cannot find the user name of uid " + std::to_string(getuid()));
    return pw->pw_name;
}

std::string user_name_of(uid_t uid)
{
    if (const passwd* pw = getpwuid(uid))
        return pw->pw_name;
    return std::to_string(uid);
}

std::optional<uid_t> uid_of(const std::string& user)
{
    if (const passwd* pw = getpwnam(user.c_str()))
        return pw->pw_uid;
    return std::nullopt;
}

}  // namespace dlstage
