#include "lib/log.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/write_all.hpp"

namespace dlstage {

std::string message_line(std::string_view message)
{
    return kMessagePrefix + printable(message);
}

void say(std::string_view message)
{
    (void)write_all(STDERR_FILENO, message_line(message) + "\n");  // if it fails, nowhere left to say it
}

void sayf(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int length = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string text(length > 0 ? static_cast<std::size_t>(length) : 0u, '\0');
    if (length > 0)
        std::vsnprintf(text.data(), text.size() + 1, format, again);
    va_end(again);
    say(text);
}

}  // namespace dlstage
