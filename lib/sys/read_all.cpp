#include "lib/sys/read_all.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/quick_stat.hpp"
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

namespace {
SmallFile read_opened(const Fd& fd, const std::string& shown, std::size_t limit,
                      std::optional<uid_t> must_own = std::nullopt)
{
    SmallFile file;
    if (::fstat(fd.get(), &file.st) != 0)
        throw_cannot("read", shown, errno);
    if (!S_ISREG(file.st.st_mode))
        throw Error(shown + " is not a regular file");
    if (must_own && file.st.st_uid != *must_own)
        throw Error(shown + " belongs to uid " + std::to_string(file.st.st_uid) + ", not to you");
    file.content = read_all(fd.get(), limit, shown);
    return file;
}
}  // namespace

std::optional<SmallFile> read_small_file_at(int dir_fd, const std::string& name, const std::string& shown,
                                            std::size_t limit, std::optional<uid_t> must_own)
{
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT)
            return std::nullopt;
        throw_cannot("read", shown, errno);
    }
    return read_opened(fd, shown, limit, must_own);
}

std::optional<SmallFile> read_small_file_in(int dir_fd, const std::string& name, const std::string& shown,
                                            std::size_t limit)
{
    QuickStat dir;
    if (!quick_stat(dir_fd, dir))
        throw_cannot("examine the directory of", shown, errno);
    const Fd passage(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!passage.valid()) {
        if (errno == ENOENT)
            return std::nullopt;
        throw_cannot("read", shown, errno);
    }
    QuickStat f;
    if (!quick_stat(passage.get(), f))
        throw_cannot("examine", shown, errno);
    if (f.dev != dir.dev)
        throw Error(shown + " is a mount point; not read");
    if (!S_ISREG(f.mode))
        throw Error(shown + " is not a regular file");
    // The inode just examined, not whatever the name leads to by now.
    const std::string again = "/proc/self/fd/" + std::to_string(passage.get());
    const Fd fd(::open(again.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", shown, errno);
    return read_opened(fd, shown, limit);
}

}  // namespace dlstage
