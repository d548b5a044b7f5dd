// Reads the pieces of a chunk from the source, as the user.  Each byte of
// the dataset is read by exactly one rank for the whole job.
#pragma once

#include <cstdint>
#include <string>
#include <sys/stat.h>
#include <unordered_map>

#include "lib/sys/fd.hpp"
#include "stager/chunks.hpp"

namespace dlstage::stager {

// The one rule for a source file that is not what the plan says: every
// file opened is compared with its plan entry (size and mtime), so a plan
// made earlier (from a manifest, or a walk minutes ago) never stages stale
// or torn data.  "" when st matches entry, else the whole message:
// "SOURCE/PATH changed since it was planned (size A -> B): run again".
std::string changed_since_planned(const std::string& path, const Entry& entry, const struct stat& st);
// The same rule, the difference alone: "size A -> B", "mtime T1 -> T2" or "".
std::string how_changed(const Entry& entry, const struct stat& st);

class SourceReader {
public:
    // opens: how many of a chunk's files this reader opens at once.  On a
    // parallel file system an open is a metadata round trip of
    // milliseconds, and a 4 MiB chunk of small images holds dozens of
    // files: opened one after the other, the round trips, not the bytes,
    // set the pace.
    explicit SourceReader(const Plan& plan, unsigned opens = 1) : plan_(plan), opens_(opens) {}

    // Fills out (chunk.bytes long).  Throws Error when a file cannot be read
    // or is not what the plan says (the source changed since planning).
    void read(const Chunk& chunk, char* out);

    std::uint64_t bytes_read() const { return bytes_read_; }

private:
    Fd open_checked(std::size_t entry, int dir_fd) const;
    std::size_t open_ahead(const Chunk& chunk, std::size_t first);
    int dir_fd_for(const std::string& dir);
    std::string path_of(std::size_t entry) const;

    const Plan& plan_;
    unsigned opens_;
    std::size_t open_entry_ = static_cast<std::size_t>(-1);
    Fd file_;  // the file of open_entry_: it may go on in the next chunk
    // The next files of the chunk being read, opened together.
    std::unordered_map<std::size_t, Fd> opened_;
    std::uint64_t bytes_read_ = 0;
    // Directories opened so far (bounded): files are opened relative to
    // them, one lookup each instead of one per path component.
    std::unordered_map<std::string, Fd> dir_fds_;
};

}  // namespace dlstage::stager
