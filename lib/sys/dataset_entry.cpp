#include "lib/sys/dataset_entry.hpp"

#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
const char* special_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a fifo";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "something else";
}
}  // namespace

std::string check_dataset_entry(const FoundEntry& found, const std::string& root)
{
    const mode_t mode = found.st.st_mode;
    const auto where = [&] { return shown_path(root + "/" + found.path); };
    if (S_ISLNK(mode)) {
        std::string target(PATH_MAX, '\0');
        const ssize_t n = readlinkat(found.dir_fd, found.name, target.data(), target.size());
        if (n < 0)
            throw_cannot("read", where(), errno);
        target.resize(static_cast<std::size_t>(n));
        return target;
    }
    if (S_ISREG(mode)) {
        // mksquashfs would store an unreadable file as an empty one.
        if (faccessat(found.dir_fd, found.name, R_OK, 0) != 0)
            throw_cannot("read", where(), errno);
    } else if (!S_ISDIR(mode)) {
        throw Error(quoted(root + "/" + found.path) + " is " + special_kind(mode) +
                    ", not a file, directory or symlink; datasets cannot hold devices, fifos or sockets");
    }
    return "";
}

}  // namespace dlstage
