// Reading a child process's output as it comes, line by line (how
// run_reading_stderr passes on a program's messages).
#pragma once

#include <cerrno>
#include <functional>
#include <string>
#include <unistd.h>

namespace dlstage {

// Calls on_line for each line read from fd until end of file (a last line
// without a newline included), without the newline.
inline void for_each_line(int fd, const std::function<void(const std::string&)>& on_line)
{
    std::string pending;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        pending.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
            on_line(pending.substr(0, nl));
    }
    if (!pending.empty())
        on_line(pending);
}

}  // namespace dlstage
