#include "stager/source_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

namespace {
// "2026-11-23 17:33:26.123456789 UTC": the nanoseconds, because a rewrite
// within the same second is a change too.
std::string utc_time(std::int64_t sec, std::uint32_t nsec)
{
    char fraction[16];
    std::snprintf(fraction, sizeof fraction, ".%09u UTC", nsec);
    return time_text(sec, "%Y-%m-%d %H:%M:%S", true) + fraction;
}

std::string changed(const std::string& path, const std::string& how)
{
    return shown_path(path) + " changed since it was planned (" + how + "): run again";
}
}  // namespace

std::string how_changed(const Entry& entry, const struct stat& st)
{
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size != entry.size)
        return "size " + std::to_string(entry.size) + " -> " + std::to_string(size);
    if (st.st_mtim.tv_sec != entry.mtime_sec || static_cast<std::uint32_t>(st.st_mtim.tv_nsec) != entry.mtime_nsec)
        return "mtime " + utc_time(entry.mtime_sec, entry.mtime_nsec) + " -> " +
               utc_time(st.st_mtim.tv_sec, static_cast<std::uint32_t>(st.st_mtim.tv_nsec));
    return {};
}

std::string changed_since_planned(const std::string& path, const Entry& entry, const struct stat& st)
{
    const std::string how = how_changed(entry, st);
    return how.empty() ? how : changed(path, how);
}

std::string SourceReader::path_of(std::size_t entry) const
{
    return plan_.source_root + "/" + plan_.entries[entry].path;
}

int SourceReader::dir_fd_for(const std::string& dir)
{
    if (const auto it = dir_fds_.find(dir); it != dir_fds_.end())
        return it->second.get();
    const std::string path = dir.empty() ? plan_.source_root : plan_.source_root + "/" + dir;
    Fd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", path, errno);
    return dir_fds_.emplace(dir, std::move(fd)).first->second.get();
}

// Safe on several threads at once: it touches nothing of the reader's.
Fd SourceReader::open_checked(std::size_t entry, int dir_fd) const
{
    const std::string name(base_name(plan_.entries[entry].path));
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid())
        throw_cannot("read", path_of(entry), errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0)
        throw_cannot("read", path_of(entry), errno);
    if (const std::string problem = changed_since_planned(path_of(entry), plan_.entries[entry], st); !problem.empty())
        throw Error(problem);
    // One sequential pass: let the kernel read ahead and not keep the pages.
    posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd;
}

// Opens the files of the pieces from `first` on that are not open yet, up to
// opens_ of them, all at once: so at most opens_ files (and the one the
// reader goes on with) are open per reader however small the files of a
// chunk are.  Directories are looked up first, on this thread (their table
// is the reader's); the opens and their checks then run in parallel.
// Returns the end of the pieces whose files are now open.
std::size_t SourceReader::open_ahead(const Chunk& chunk, std::size_t first)
{
    // Cleared here, never while a group's directories are in use: at most
    // kMaxOpenDirs plus one group's directories are open.
    constexpr std::size_t kMaxOpenDirs = 256;
    if (dir_fds_.size() >= kMaxOpenDirs)
        dir_fds_.clear();
    std::vector<std::size_t> entries;
    std::vector<int> dirs;
    std::size_t end = first;
    for (; end < chunk.pieces.size(); ++end) {
        const std::size_t entry = chunk.pieces[end].entry;
        if (entry == open_entry_ || (!entries.empty() && entries.back() == entry))
            continue;
        if (entries.size() == std::max(1u, opens_))
            break;
        entries.push_back(entry);
        dirs.push_back(dir_fd_for(std::string(parent_in_tree(plan_.entries[entry].path))));
    }
    std::vector<Fd> fds(entries.size());
    const auto open_one = [&](std::size_t i) { fds[i] = open_checked(entries[i], dirs[i]); };
    if (entries.size() > 1) {
        for_each_index(entries.size(), opens_, open_one);
    } else if (!entries.empty()) {
        open_one(0);  // a large file's chunk: no thread to start
    }
    opened_.clear();
    for (std::size_t i = 0; i < entries.size(); ++i)
        opened_[entries[i]] = std::move(fds[i]);
    return end;
}

void SourceReader::read(const Chunk& chunk, char* out)
{
    for (std::size_t next = 0, opened_until = 0; next < chunk.pieces.size(); ++next) {
        if (next == opened_until)
            opened_until = open_ahead(chunk, next);
        const Piece& piece = chunk.pieces[next];
        if (piece.entry != open_entry_) {
            file_ = std::move(opened_.at(piece.entry));
            open_entry_ = piece.entry;
        }
        const int fd = file_.get();
        std::uint64_t done = 0;
        while (done < piece.length) {
            const ssize_t n = ::pread(fd, out + done, piece.length - done, static_cast<off_t>(piece.offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                throw_cannot("read", path_of(piece.entry), errno);
            if (n == 0)
                throw Error(changed(path_of(piece.entry), "shorter than its planned " +
                                                              std::to_string(plan_.entries[piece.entry].size) +
                                                              " bytes while being read"));
            done += static_cast<std::uint64_t>(n);
        }
        out += piece.length;
        bytes_read_ += piece.length;
    }
}

}  // namespace dlstage::stager
