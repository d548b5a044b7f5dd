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
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "lib/sys/fd.hpp"
#include "stager/transfer/chunks.hpp"

namespace dlstage::stager {

// Told of each piece of a file written in several pieces, once written.
using PieceWritten = std::function<void(const Plan& plan, std::size_t entry, std::uint64_t offset, const char* data,
                                        std::uint32_t length)>;

// How a writer shares its destination.  Node tiers: each rank writes the
// whole tree on its own node.  A shared tier: all ranks write one tree on
// the shared file system, each its own chunks; rank 0 makes the skeleton,
// and a file whose pieces came from several ranks is finished after all
// of them wrote (finish_split_files, after a barrier).
struct WriterOptions {
    bool shared = false;
    // Give files and directories the source's mtime.  Off on a shared tier
    // whose purge counts mtime: a copy with its source's old mtimes would
    // be purged at once.
    bool keep_times = true;
    // Permission bits files may keep.  A node cache's entry is 0555: a
    // job that writes into its cached files by mistake gets EACCES instead
    // of changing them for the user's next job (a chmod back is seen by the
    // next job's check: it changes the ctime).
    unsigned file_mode_mask = 0777;
    // dest exists already (a plan staged in segments: one writer each, into
    // the same directory); else create_skeleton creates it.
    bool dest_exists = false;
    // dest holds an unfinished copy of a larger plan, gone on from (this
    // plan: its directories and what is still to be written): directories
    // that exist are kept (the caller made them writable again, as
    // create_skeleton makes new ones); the plan's files and symlinks do not
    // exist (the caller removed what was cut off), but the files of its
    // held prefixes, which hold those bytes.  Implies dest_exists.
    bool continues = false;
    // Called after each piece of a file written in several pieces (none of
    // a file written whole at once), from the writing thread: the record
    // that lets a copy cut off mid-file go on from it (stager/copies/piece_log).
    PieceWritten piece_written;
};

class TreeWriter {
public:
    // dest must not exist (but with options.dest_exists); it is created
    // with mode 0700.
    TreeWriter(const Plan& plan, std::string dest, WriterOptions options = {});
    TreeWriter(const TreeWriter&) = delete;
    TreeWriter& operator=(const TreeWriter&) = delete;

    void create_skeleton();

    // Writes a chunk's data (chunk.bytes long) into its files; a file is
    // finished (size checked, mode and mtime set) with its last byte.
    // Thread-safe for distinct chunks.
    void write(const Chunk& chunk, const char* data);

    // Shared: finishes the files whose last piece this rank wrote and whose
    // other pieces other ranks wrote.  Call once every rank has written.
    void finish_split_files();

    // Symlinks, then directory modes and mtimes, deepest first.  Throws if
    // any file did not receive all its bytes (node tiers: this rank had
    // them all; shared: rank 0 alone calls it, after finish_split_files).
    void finish();

    std::uint64_t bytes_written() const { return bytes_written_; }

    // What of the plan's files is not written yet (bytes, and files not
    // whole), while other threads write: the room a segment ahead of the
    // writes still needs (stager/steps/segment_transfer).  Node tiers.
    struct Left {
        std::uint64_t bytes = 0;
        std::uint64_t files = 0;
    };
    Left left_to_write() const;

private:
    // The directory of the files a chunk writes, open while they are.
    class ParentDirs {
    public:
        int fd_for(const TreeWriter& writer, std::size_t entry);

    private:
        std::string_view name_;
        Fd dir_;
    };
    void write_whole_file(std::size_t entry, int dir_fd, const char* data);
    void write_all(int fd, const char* data, std::uint64_t length, std::uint64_t offset, std::size_t entry) const;
    Fd open_for_write(std::size_t entry, bool create_new);
    void finish_file(std::size_t entry, Fd fd);
    std::string dest_path(std::size_t entry) const { return dest_ + "/" + std::string(plan_.entries.path(entry)); }

    const Plan& plan_;
    std::string dest_;
    WriterOptions options_;
    mode_t umask_;  // the process's: a mode it would cut is set with fchmod
    std::mutex split_mutex_;
    std::vector<std::size_t> split_;                         // shared: files to finish in finish_split_files
    std::unique_ptr<std::atomic<std::uint64_t>[]> written_;  // bytes received per entry
    std::atomic<std::uint64_t> bytes_written_{0};
};

// Sets mode and mtime of a path without following a symlink at its end.
void apply_times(const std::string& path, std::int64_t sec, std::uint32_t nsec);

// The plan's directories below dest get their modes (and, keep_times,
// their mtimes), deepest first, never through a symlink: a tree's last
// step (TreeWriter::finish, a copy made by links in stager/copies/kept_copy).
void set_dir_modes(const std::string& dest, const Plan& plan, bool keep_times);

}  // namespace dlstage::stager
