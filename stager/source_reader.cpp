#include "stager/source_reader.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "lib/error.hpp"

namespace dlstage::stager {

SourceReader::~SourceReader()
{
    if (fd_ >= 0)
        ::close(fd_);
}

int SourceReader::fd_for(std::size_t entry)
{
    if (entry == open_entry_)
        return fd_;
    if (fd_ >= 0)
        ::close(fd_);
    const std::string path = plan_.source_root + "/" + plan_.entries[entry].path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    open_entry_ = entry;
    if (fd_ < 0)
        throw Error("cannot read " + path + ": " + std::strerror(errno));
    // One sequential pass: let the kernel read ahead and not keep the pages.
    posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd_;
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
                throw Error("cannot read " + path + ": " + std::strerror(errno));
            if (n == 0)
                throw Error(path + " became shorter while staging (the source changed); stage it again");
            done += static_cast<std::uint64_t>(n);
        }
        out += piece.length;
        bytes_read_ += piece.length;
    }
}

}  // namespace dlstage::stager
