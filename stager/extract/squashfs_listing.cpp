#include "stager/extract/squashfs_listing.hpp"

#include <algorithm>
#include <limits>

namespace dlstage::stager {

namespace {
// "drwxr-xr-x ", "-rw-r--r-- ", "lrwxrwxrwx ", "crw-rw-rw- ", "-rwsr-sr-t ": the
// type and permissions as ls -l shows them, then a space.
bool starts_like_an_entry(std::string_view line)
{
    if (line.size() < 11 || std::string_view("-dlcbps").find(line[0]) == std::string_view::npos || line[10] != ' ')
        return false;
    for (std::size_t i = 1; i < 10; ++i)
        if (std::string_view("-rwxsStT").find(line[i]) == std::string_view::npos)
            return false;
    return true;
}

// The size field of a file's line: after the mode and the owner, digits and
// a space.  Nothing if there is none or it does not fit.
std::optional<std::uint64_t> file_size(std::string_view line)
{
    std::size_t pos = 11;
    const auto skip = [&](bool spaces) {
        while (pos < line.size() && (line[pos] == ' ') == spaces)
            ++pos;
    };
    skip(true);
    skip(false);  // owner: "uid/gid"
    skip(true);
    std::uint64_t size = 0;
    const std::size_t start = pos;
    for (; pos < line.size() && line[pos] >= '0' && line[pos] <= '9'; ++pos) {
        const unsigned digit = static_cast<unsigned>(line[pos] - '0');
        if (size > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
            return std::nullopt;
        size = size * 10 + digit;
    }
    if (pos == start || pos >= line.size() || line[pos] != ' ')
        return std::nullopt;
    return size;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b)
{
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

std::uint32_t little_endian_u32(std::string_view bytes, std::size_t at)
{
    std::uint32_t value = 0;
    for (std::size_t i = 4; i-- > 0;)
        value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
    return value;
}
}  // namespace

void ListingTotals::feed(std::string_view chunk)
{
    for (std::size_t newline; (newline = chunk.find('\n')) != std::string_view::npos;) {
        line_.append(chunk.substr(0, std::min(newline, kKeep - std::min(kKeep, line_.size()))));
        take_line(line_);
        line_.clear();
        chunk.remove_prefix(newline + 1);
    }
    line_.append(chunk.substr(0, kKeep - std::min(kKeep, line_.size())));
}

void ListingTotals::finish()
{
    if (!line_.empty())
        take_line(line_);
    line_.clear();
}

void ListingTotals::take_line(std::string_view line)
{
    if (!starts_like_an_entry(line))
        return;
    ++entries_;
    if (line[0] != '-')
        return;
    const auto size = file_size(line);
    if (size)
        file_bytes_ = saturating_add(file_bytes_, *size);
    else if (unreadable_.empty())
        unreadable_ = std::string(line);
}

std::optional<std::uint32_t> superblock_inodes(std::string_view head)
{
    // s_magic "hsqs" at 0, inodes at 4, s_major at 28, s_minor at 30 (all
    // little-endian); the superblock is 96 bytes.
    constexpr std::size_t kSuperblock = 96;
    if (head.size() < kSuperblock || head.substr(0, 4) != "hsqs")
        return std::nullopt;
    const std::uint32_t version = little_endian_u32(head, 28);  // s_major | s_minor << 16
    if (version != 4)
        return std::nullopt;
    return little_endian_u32(head, 4);
}

}  // namespace dlstage::stager
