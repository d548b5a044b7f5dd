// Descending directories by fd, never by path: how root code and the
// stager walk trees that users control.
#pragma once

#include <fcntl.h>
#include <string>

#include "lib/sys/fd.hpp"

namespace dlstage {

// O_NOFOLLOW|O_DIRECTORY: a symlink or anything but a directory fails to open.
inline constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// O_PATH only looks the name up: it neither opens the directory in its file
// system (a FUSE server would be asked) nor needs read permission, so the
// stager, as the user, can pass through a 0711 tier root too.
inline constexpr int kPassageFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

inline Fd open_passage_at(int dirfd, const std::string& name)
{
    return Fd(::openat(dirfd, name.c_str(), kPassageFlags));
}

// The directory an O_PATH fd names, opened for reading.  "." from that fd
// stays on its mount: a file system mounted over it meanwhile is not entered.
inline Fd reopen_for_reading(const Fd& passage)
{
    return Fd(::openat(passage.get(), ".", kDirFlags));
}

}  // namespace dlstage
