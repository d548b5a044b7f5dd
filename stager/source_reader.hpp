// Reads the pieces of a chunk from the source, as the user.  Each byte of
// the dataset is read by exactly one rank for the whole job.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "lib/sys/fd.hpp"
#include "stager/chunks.hpp"

namespace dlstage::stager {

class SourceReader {
public:
    explicit SourceReader(const Plan& plan) : plan_(plan) {}

    // Fills out (chunk.bytes long).  Throws Error when a file cannot be read
    // or is shorter than planned (the source changed while staging).
    void read(const Chunk& chunk, char* out);

    std::uint64_t bytes_read() const { return bytes_read_; }

private:
    int fd_for(std::size_t entry);
    int dir_fd_for(const std::string& dir);

    const Plan& plan_;
    std::size_t open_entry_ = static_cast<std::size_t>(-1);
    Fd file_;  // the file of open_entry_
    std::uint64_t bytes_read_ = 0;
    // Directories opened so far (bounded): files are opened relative to
    // them, one lookup each instead of one per path component.
    std::unordered_map<std::string, Fd> dir_fds_;
};

}  // namespace dlstage::stager
