#include "lib/sys/replace_file.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/write_all.hpp"

namespace dlstage {

void replace_file_at(int dir_fd, const std::string& shown, const std::string& name, std::string_view content,
                     mode_t mode)
{
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".tmp.%d.%lx", static_cast<int>(getpid()),
                  static_cast<unsigned long>(std::random_device{}()));
    const std::string tmp = "." + name + suffix;
    const Fd fd(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid())
        throw_cannot("create", shown + "/" + tmp, errno);
    try {
        if (::fchmod(fd.get(), mode) != 0)  // the umask must not loosen or tighten it
            throw_cannot("set the mode of", shown + "/" + tmp, errno);
        if (!write_all(fd.get(), content))
            throw_cannot("write", shown + "/" + tmp, errno);
        if (fsync(fd.get()) != 0)
            throw_cannot("sync", shown + "/" + tmp, errno);
        if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0)
            throw_cannot("replace", shown + "/" + name, errno);
    } catch (...) {
        ::unlinkat(dir_fd, tmp.c_str(), 0);
        throw;
    }
}

}  // namespace dlstage
