#include "lib/sys/quick_stat.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace dlstage {

bool quick_stat(int dirfd, const char* name, int flags, QuickStat& out)
{
    struct statx sx {};
    if (::statx(dirfd, name, flags | AT_STATX_DONT_SYNC,
                STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_INO | STATX_MTIME | STATX_CTIME, &sx) != 0)
        return false;
    out.mode = sx.stx_mode;
    out.uid = sx.stx_uid;
    out.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    out.ino = sx.stx_ino;
    out.gid = sx.stx_gid;
    out.mtime = sx.stx_mtime.tv_sec;
    out.ctime = sx.stx_ctime.tv_sec;
    return true;
}

bool name_exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace dlstage
