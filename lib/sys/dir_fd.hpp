// Descending directories by fd, never by path: how root code and the
// stager walk trees that users control.
#pragma once

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <utility>

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

// The entries of an open directory from the first, "." and ".." left out.
// It reads through its own copy of the fd (fdopendir takes over the fd it
// is given), so the caller's fd stays open; the copy shares its position,
// which is why every stream starts with a rewind.
class DirStream {
public:
    // valid() false, errno set, when dir cannot be read.
    explicit DirStream(int dir)
    {
        const int copy = dir >= 0 ? ::fcntl(dir, F_DUPFD_CLOEXEC, 0) : -1;
        if (copy >= 0 && !(stream_ = ::fdopendir(copy))) {
            const int err = errno;
            ::close(copy);
            errno = err;
        }
        if (stream_)
            ::rewinddir(stream_);
    }
    ~DirStream()
    {
        if (stream_)
            ::closedir(stream_);
    }
    DirStream(const DirStream&) = delete;
    DirStream& operator=(const DirStream&) = delete;

    bool valid() const { return stream_ != nullptr; }
    int fd() const { return ::dirfd(stream_); }

    // The next entry, or nullptr at the end: then error() tells whether
    // the directory could not be read to its end.
    const dirent* next()
    {
        for (;;) {
            errno = 0;
            const dirent* e = ::readdir(stream_);
            error_ = e ? 0 : errno;
            if (!e || (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0))
                return e;
        }
    }
    int error() const { return error_; }

private:
    DIR* stream_ = nullptr;
    int error_ = 0;
};

}  // namespace dlstage
