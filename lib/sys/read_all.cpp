#include "lib/sys/read_all.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "lib/error.hpp"
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

}  // namespace dlstage
