#include "lib/sys/group_list.hpp"

#include <grp.h>

namespace dlstage {

std::vector<gid_t> group_list(const std::string& user, gid_t primary)
{
    // getgrouplist says how many there are when the room was too small.
    int count = 64;
    std::vector<gid_t> gids(static_cast<std::size_t>(count));
    while (::getgrouplist(user.c_str(), primary, gids.data(), &count) < 0)
        gids.resize(static_cast<std::size_t>(count) + 64), count = static_cast<int>(gids.size());
    gids.resize(static_cast<std::size_t>(count));
    return gids;
}

}  // namespace dlstage
