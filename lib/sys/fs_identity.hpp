// Acting on files as another user, in the calling thread only.
//
// Root removing a job's directory must not remove what the job's user
// could not: a user can move another user's data (from a shared sticky
// directory) into their job directory, and root's unlink would not ask
// whose it is.  With the file system identity switched (setfsuid,
// setfsgid), every permission check is the user's own; root's
// capabilities for anything else (unmounting) stay.
#pragma once

#include <sys/types.h>

namespace dlstage {

class FsIdentity {
public:
    // Switches to uid:gid; does nothing when the caller already is uid.
    FsIdentity(uid_t uid, gid_t gid);
    ~FsIdentity();
    FsIdentity(const FsIdentity&) = delete;
    FsIdentity& operator=(const FsIdentity&) = delete;

    bool switched() const { return switched_; }

private:
    bool switched_ = false;
    uid_t old_uid_ = 0;
    gid_t old_gid_ = 0;
};

}  // namespace dlstage
