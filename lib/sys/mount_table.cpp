#include "lib/sys/mount_table.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
// "\040" -> ' ': the kernel escapes space, tab, newline and backslash.
std::string unescape(std::string_view field)
{
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        const bool octal = field[i] == '\\' && i + 3 < field.size() &&
                           field.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos;
        if (octal) {
            out += static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0'));
            i += 3;
        } else {
            out += field[i];
        }
    }
    return out;
}

bool parse_int(std::string_view text, int& value)
{
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string_view::npos)
        return false;
    value = std::stoi(std::string(text));
    return true;
}

bool is_within(std::string_view point, std::string_view dir)
{
    if (!starts_with(point, dir))
        return false;
    return point.size() == dir.size() || point[dir.size()] == '/' || dir == "/";
}
}  // namespace

bool MountEntry::is_fuse() const
{
    return fstype == "fuse" || fstype == "fuseblk" || starts_with(fstype, "fuse.") || starts_with(fstype, "fuseblk.");
}

std::vector<MountEntry> parse_mountinfo(std::string_view text)
{
    // id parent major:minor root point options [optional...] - fstype source super-options
    std::vector<MountEntry> entries;
    for (const std::string& line : split(text, '\n')) {
        const std::vector<std::string> fields = split(line, ' ');
        const auto dash = std::find(fields.begin(), fields.end(), "-");
        if (fields.size() < 7 || dash == fields.end() || dash - fields.begin() < 6 || dash + 1 == fields.end())
            continue;
        MountEntry entry;
        if (!parse_int(fields[0], entry.id) || !parse_int(fields[1], entry.parent_id))
            continue;
        entry.point = unescape(fields[4]);
        entry.fstype = unescape(*(dash + 1));
        if (entry.point.empty() || entry.point.front() != '/')
            continue;
        entries.push_back(std::move(entry));
    }
    return entries;
}

std::string kernel_path(int fd)
{
    char buf[4096];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buf)
        return "";
    return std::string(buf, static_cast<std::size_t>(n));
}

MountTable MountTable::current()
{
    const Fd fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", "/proc/self/mountinfo", errno);
    // Thousands of mounts (containers) still fit.
    const std::string text = read_all(fd.get(), 64 << 20, "/proc/self/mountinfo");
    return MountTable(parse_mountinfo(text));
}

std::optional<MountEntry> MountTable::at(std::string_view path) const
{
    // Later lines are mounted later: on a stack of mounts the last is on top.
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
        if (it->point == path)
            return *it;
    return std::nullopt;
}

std::vector<std::string> MountTable::points_within(std::string_view dir) const
{
    std::vector<std::string> points;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
        if (is_within(it->point, dir))
            points.push_back(it->point);
    std::stable_sort(points.begin(), points.end(), [](const std::string& a, const std::string& b) {
        return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    return points;
}

}  // namespace dlstage
