#include "dataset/entry_list.hpp"

#include <algorithm>
#include <climits>

#include "lib/error.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
void check_length(std::string_view text, const char* what)
{
    if (text.size() >= PATH_MAX)
        throw Error(std::string("a ") + what + " of " + std::to_string(text.size()) +
                    " bytes is longer than PATH_MAX: " + quoted(std::string(text.substr(0, 64))) + "...");
}
}  // namespace

void EntryList::add(EntryType type, std::string_view path, std::uint32_t mode, std::int64_t mtime_sec,
                    std::uint32_t mtime_nsec, std::uint64_t size, std::string_view target)
{
    if (path.empty())
        throw Error("an entry without a path");
    check_length(path, "path");
    Record r;
    r.path_at = arena_.size();
    r.path_len = static_cast<std::uint16_t>(path.size());
    r.mode = static_cast<std::uint16_t>(mode & 07777);
    r.mtime_sec = mtime_sec;
    r.mtime_nsec = mtime_nsec;
    r.type = type;
    arena_ += path;
    if (type == EntryType::Symlink) {
        check_length(target, "symlink target");
        r.size = target.size();
        arena_ += target;
    } else {
        r.size = type == EntryType::File ? size : 0;
    }
    records_.push_back(r);
}

Entry EntryList::operator[](std::size_t i) const
{
    const Record& r = records_[i];
    Entry e;
    e.type = r.type;
    e.path = path(i);
    e.mode = r.mode;
    e.mtime_sec = r.mtime_sec;
    e.mtime_nsec = r.mtime_nsec;
    e.size = file_size(i);
    e.target = target(i);
    return e;
}

std::string_view EntryList::target(std::size_t i) const
{
    const Record& r = records_[i];
    if (r.type != EntryType::Symlink)
        return {};
    return {arena_.data() + r.path_at + r.path_len, static_cast<std::size_t>(r.size)};
}

void EntryList::sort_by_path()
{
    // The records move, the arena stays: no second copy of the paths.
    std::sort(records_.begin(), records_.end(), [this](const Record& a, const Record& b) {
        return std::string_view(arena_.data() + a.path_at, a.path_len) <
               std::string_view(arena_.data() + b.path_at, b.path_len);
    });
}

std::uint64_t EntryList::total_file_bytes() const
{
    std::uint64_t sum = 0;
    for (const Record& r : records_)
        sum += r.type == EntryType::File ? r.size : 0;
    return sum;
}

std::uint64_t EntryList::non_dir_count() const
{
    return static_cast<std::uint64_t>(
        std::count_if(records_.begin(), records_.end(), [](const Record& r) { return r.type != EntryType::Dir; }));
}

EntryList EntryList::adopt(std::vector<Record> records, std::string arena)
{
    for (const Record& r : records) {
        const std::uint64_t extra = r.type == EntryType::Symlink ? r.size : 0;
        const bool known = r.type == EntryType::File || r.type == EntryType::Dir || r.type == EntryType::Symlink;
        if (!known || r.path_len == 0 || r.path_at > arena.size() || arena.size() - r.path_at < r.path_len ||
            arena.size() - r.path_at - r.path_len < extra || extra >= PATH_MAX)
            throw Error("malformed list of entries (an entry outside its paths)");
    }
    EntryList list;
    list.records_ = std::move(records);
    list.arena_ = std::move(arena);
    return list;
}

}  // namespace dlstage
