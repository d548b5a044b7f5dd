// A user's Unix groups as the group database has them (getgrouplist): for
// the [[overrides]] that match on a group and for a child that acts as the
// user.  An NSS lookup may hang, so root code asks only when it must.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage {

// `primary` first, then the user's supplementary groups; just `primary`
// when the database knows no more.
std::vector<gid_t> group_list(const std::string& user, gid_t primary);

}  // namespace dlstage
