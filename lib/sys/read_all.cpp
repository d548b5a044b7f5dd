#include "lib/sys/read_all.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

std::string read_all(int fd, std::size_t limit, const std::string& shown)
{
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("read", shown, errno);
        if (n == 0)
            return text;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > limit)
            throw Error(shown + " is larger than " + std::to_string(limit) + " bytes");
    }
}

std::optional<SmallFile> read_small_file_at(int dir_fd, const std::string& name, const std::string& shown,
                                            std::size_t limit)
{
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT)
            return std::nullopt;
        throw_cannot("read", shown, errno);
    }
    SmallFile file;
    if (::fstat(fd.get(), &file.st) != 0)
        throw_cannot("read", shown, errno);
    if (!S_ISREG(file.st.st_mode))
        throw Error(shown + " is not a regular file");
    file.content = read_all(fd.get(), limit, shown);
    return file;
}

}  // namespace dlstage
