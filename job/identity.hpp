// Who and where a user-side process is: the names path templates expand
// (%u, %n) on a compute node, as the stager and the mount holder see them.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace dlstage {

// Slurm's name of this node (SLURMD_NODENAME in a step), else the host name.
std::string this_node_name();

// The name of the calling user; throws Error if uid has no passwd entry.
std::string this_user_name();

// A user's name for listings, or the uid as digits if it has none (a
// deleted user's files).
std::string user_name_of(uid_t uid);

// A user's uid by name; nothing if there is no such user.
std::optional<uid_t> uid_of(const std::string& user);

}  // namespace dlstage
