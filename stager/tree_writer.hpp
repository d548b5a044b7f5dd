// Builds the plan's tree under a destination directory on a node: the
// skeleton (directories, empty files) first, then file data as chunks
// arrive, then symlinks and the directories' final modes and mtimes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stager/chunks.hpp"

namespace dlstage::stager {

class TreeWriter {
public:
    // dest must not exist; it is created with mode 0700.
    TreeWriter(const Plan& plan, std::string dest);
    ~TreeWriter();
    TreeWriter(const TreeWriter&) = delete;
    TreeWriter& operator=(const TreeWriter&) = delete;

    void create_skeleton();

    // Writes a chunk's data (chunk.bytes long) into its files; a file is
    // finished (size checked, mode and mtime set, closed) with its last piece.
    void write(const Chunk& chunk, const char* data);

    // Symlinks, then directory modes and mtimes, deepest first.  Throws if
    // any file did not receive all its bytes.
    void finish();

    std::uint64_t bytes_written() const { return bytes_written_; }

private:
    int open_for_write(std::size_t entry);
    void finish_file(std::size_t entry, int fd);
    std::string dest_path(const Entry& e) const { return dest_ + "/" + e.path; }

    const Plan& plan_;
    std::string dest_;
    std::vector<std::uint64_t> written_;  // bytes received per entry
    std::size_t open_entry_ = static_cast<std::size_t>(-1);
    int fd_ = -1;
    std::uint64_t bytes_written_ = 0;
};

// Sets mode and mtime of a path without following a symlink at its end.
void apply_times(const std::string& path, std::int64_t sec, std::uint32_t nsec);

}  // namespace dlstage::stager
