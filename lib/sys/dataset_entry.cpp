#include "lib/sys/dataset_entry.hpp"

#include <algorithm>
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

Caller Caller::current()
{
    Caller caller;
    caller.uid = geteuid();
    caller.gid = getegid();
    const int count = getgroups(0, nullptr);
    if (count > 0) {
        caller.groups.resize(static_cast<std::size_t>(count));
        const int got = getgroups(count, caller.groups.data());
        caller.groups.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    }
    return caller;
}

bool mode_lets_read(const struct stat& st, const Caller& caller)
{
    if (st.st_uid == caller.uid)
        return (st.st_mode & S_IRUSR) != 0;
    const bool member = st.st_gid == caller.gid ||
                        std::find(caller.groups.begin(), caller.groups.end(), st.st_gid) != caller.groups.end();
    if (member)
        return (st.st_mode & S_IRGRP) != 0;
    return (st.st_mode & S_IROTH) != 0;
}

std::string check_dataset_entry(const FoundEntry& found, const std::string& root, const Caller* trusted_reader)
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
        const bool by_mode = trusted_reader && mode_lets_read(found.st, *trusted_reader);
        if (!by_mode && faccessat(found.dir_fd, found.name, R_OK, 0) != 0)
            throw_cannot("read", where(), errno);
    } else if (!S_ISDIR(mode)) {
        throw Error(quoted(root + "/" + found.path) + " is " + special_kind(mode) +
                    ", not a file, directory or symlink; datasets cannot hold devices, fifos or sockets");
    }
    return "";
}

}  // namespace dlstage
