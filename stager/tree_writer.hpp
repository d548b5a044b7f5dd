// Builds the plan's tree under a destination directory on a node: the
// skeleton (directories, empty files) first, then file data as chunks
// arrive, then symlinks and the directories' final modes and mtimes.
//
// write() may run in several threads at once, for different chunks: each
// piece opens its file, writes at its offset and closes; whichever thread
// writes a file's last byte finishes it.  Small files (one piece each) cost
// one open either way; a large file costs one open per chunk.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lib/sys/fd.hpp"
#include "stager/chunks.hpp"

namespace dlstage::stager {

class TreeWriter {
public:
    // dest must not exist; it is created with mode 0700.
    TreeWriter(const Plan& plan, std::string dest);
    TreeWriter(const TreeWriter&) = delete;
    TreeWriter& operator=(const TreeWriter&) = delete;

    void create_skeleton();

    // Writes a chunk's data (chunk.bytes long) into its files; a file is
    // finished (size checked, mode and mtime set) with its last byte.
    // Thread-safe for distinct chunks.
    void write(const Chunk& chunk, const char* data);

    // Symlinks, then directory modes and mtimes, deepest first.  Throws if
    // any file did not receive all its bytes.
    void finish();

    std::uint64_t bytes_written() const { return bytes_written_; }

private:
    Fd open_for_write(std::size_t entry, bool create_new);
    void finish_file(std::size_t entry, Fd fd);
    std::string dest_path(std::size_t entry) const
    {
        return dest_ + "/" + std::string(plan_.entries.path(entry));
    }

    const Plan& plan_;
    std::string dest_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> written_;  // bytes received per entry
    std::atomic<std::uint64_t> bytes_written_{0};
};

// Sets mode and mtime of a path without following a symlink at its end.
void apply_times(const std::string& path, std::int64_t sec, std::uint32_t nsec);

}  // namespace dlstage::stager
