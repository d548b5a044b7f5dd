#include "lib/sys/fs_identity.hpp"

#include <cerrno>
#include <cstring>
#include <sys/fsuid.h>
#include <unistd.h>

#include "lib/error.hpp"

namespace dlstage {

namespace {
// setfsuid/setfsgid return the previous value and report no error: ask
// again (an invalid id changes nothing and returns the current one).
uid_t current_fsuid()
{
    return static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
}

gid_t current_fsgid()
{
    return static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
}
}  // namespace

FsIdentity::FsIdentity(uid_t uid, gid_t gid)
{
    old_uid_ = current_fsuid();
    old_gid_ = current_fsgid();
    if (old_uid_ == uid && old_gid_ == gid)
        return;
    ::setfsgid(gid);  // the group first: with fsuid no longer 0 it could not be set
    ::setfsuid(uid);
    if (current_fsuid() != uid || current_fsgid() != gid) {
        ::setfsuid(old_uid_);
        ::setfsgid(old_gid_);
        throw Error("cannot act as uid " + std::to_string(uid) + " gid " + std::to_string(gid) +
                    " (setfsuid needs root)");
    }
    switched_ = true;
}

FsIdentity::~FsIdentity()
{
    if (!switched_)
        return;
    ::setfsuid(old_uid_);
    ::setfsgid(old_gid_);
}

}  // namespace dlstage
