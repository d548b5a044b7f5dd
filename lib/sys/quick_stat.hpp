// What root code needs to know of an entry before it trusts or enters it,
// asked in a way no file system server can block.
#pragma once

#include <cstdint>
#include <fcntl.h>
#include <string>
#include <sys/types.h>

namespace dlstage {

struct QuickStat {
    mode_t mode = 0;
    uid_t uid = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    gid_t gid = 0;
    std::int64_t mtime = 0;  // seconds; as the kernel has them cached
    std::int64_t ctime = 0;
};

// statx with AT_STATX_DONT_SYNC: a FUSE file system answers it from the
// kernel's cached attributes without asking its server, so a stopped
// server cannot block it.  flags: AT_EMPTY_PATH for dirfd itself (name
// ""), or AT_SYMLINK_NOFOLLOW for an entry of dirfd.  False with errno set.
bool quick_stat(int dirfd, const char* name, int flags, QuickStat& out);

// Whether a name is there (lstat: a symlink is there whatever it points at).
// Not for root in a user's directory: lstat may ask a file system server.
bool name_exists(const std::string& path);

// The same for an fd itself (an O_PATH fd too).
inline bool quick_stat(int fd, QuickStat& out)
{
    return quick_stat(fd, "", AT_EMPTY_PATH, out);
}

}  // namespace dlstage
