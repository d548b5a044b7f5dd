#include "stager/source_reader.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <utility>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

int SourceReader::dir_fd_for(const std::string& dir)
{
    if (const auto it = dir_fds_.find(dir); it != dir_fds_.end())
        return it->second.get();
    constexpr std::size_t kMaxOpenDirs = 256;
    if (dir_fds_.size() >= kMaxOpenDirs)
        dir_fds_.clear();
    const std::string path = dir.empty() ? plan_.source_root : plan_.source_root + "/" + dir;
    Fd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", path, errno);
    return dir_fds_.emplace(dir, std::move(fd)).first->second.get();
}

int SourceReader::fd_for(std::size_t entry)
{
    if (entry == open_entry_)
        return file_.get();
    file_.reset();
    const std::string& rel = plan_.entries[entry].path;
    const std::string dir(parent_in_tree(rel));
    const std::string name(base_name(rel));
    const std::string path = plan_.source_root + "/" + rel;
    file_ = Fd(::openat(dir_fd_for(dir), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    open_entry_ = entry;
    if (!file_.valid())
        throw_cannot("read", path, errno);
    // One sequential pass: let the kernel read ahead and not keep the pages.
    posix_fadvise(file_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return file_.get();
}

void SourceReader::read(const Chunk& chunk, char* out)
{
    for (const Piece& piece : chunk.pieces) {
        const int fd = fd_for(piece.entry);
        std::uint64_t done = 0;
        while (done < piece.length) {
            const ssize_t n = ::pread(fd, out + done, piece.length - done, static_cast<off_t>(piece.offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            const std::string path = plan_.source_root + "/" + plan_.entries[piece.entry].path;
            if (n < 0)
                throw_cannot("read", path, errno);
            if (n == 0)
                throw Error(path + " became shorter while staging (the source changed); stage it again");
            done += static_cast<std::uint64_t>(n);
        }
        out += piece.length;
        bytes_read_ += piece.length;
    }
}

}  // namespace dlstage::stager
