// Reads the pieces of a chunk from the source, as the user.  Each byte of
// the dataset is read by exactly one rank for the whole job.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "stager/plan/source_check.hpp"
#include "stager/transfer/chunks.hpp"

namespace dlstage::stager {

// Whether a reader opens its next group of files in parallel, from how
// long each open of the last group took by itself (microseconds; reordered)
// and whether that group was opened in parallel.  Judged by the median: a
// thread preempted on a busy node makes one open look slow, not the group.
// Above slow_us an open is a parallel file system's round trip; back to one
// after the other below half of it.
bool opens_in_parallel(bool parallel_now, std::vector<float>& open_us, double slow_us);

// Reads that prove a plan nothing checked beforehand (a manifest's: the
// open that reads a file is its check).  What they find not as planned
// (gone, of another size or mtime, shorter than planned while read) is
// counted, once a file, the first kept as the example ("PATH: size A ->
// B"), for the transfer to say and act on once every rank is done.  Safe
// on several threads.
class ProvingReads {
public:
    // Each directory listed once before its files are opened (warm_names):
    // the caller's choice, for few ranks (each opens much of a directory).
    bool list_directories = false;
    // Called once, at the first file found not as planned (on a reader's
    // thread): what was written can no longer be gone on from.
    std::function<void()> on_first_change;

    void add(std::size_t entry, const std::string& path, const std::string& how);
    std::uint64_t count() const;
    std::string example() const;  // "" when none

private:
    mutable std::mutex mutex_;
    std::unordered_set<std::size_t> entries_;
    std::string example_;
};

class SourceReader {
public:
    // opens: how many of a chunk's files this reader opens at once.  On a
    // parallel file system an open is a metadata round trip of
    // milliseconds, and a 4 MiB chunk of small images holds dozens of
    // files: opened one after the other, the round trips, not the bytes,
    // set the pace.
    // changes: where a file not as planned is told; its pieces read as
    // zeros and the reader goes on (the copy is then not to be published).
    // Without it, such a file throws Error.  The open that reads a file is
    // what proves it (fstat on that descriptor): no stat of the source
    // beforehand.  Once this process has found one, its next chunks read as
    // zeros without opening anything: the copy is to be discarded.
    explicit SourceReader(const Plan& plan, unsigned opens = 1, ProvingReads* changes = nullptr)
        : plan_(&plan), source_root_(plan.source_root), opens_(opens), changes_(changes)
    {
    }

    // Reads the chunks of another plan of the same source from now on (the
    // next segment of a tree walked while it moves: stager/transfer/
    // exchange's parts); the directories it holds open stay open.  Called
    // for every new plan, whatever its address: a segment freed and the
    // next made may share one, and the file held open from the last plan
    // must not be taken for the new plan's entry of the same number.
    void use_plan(const Plan& plan);

    // Fills out (chunk.bytes long).  Throws Error when a file cannot be read
    // or is not what the plan says (the source changed since planning).
    void read(const Chunk& chunk, char* out);

    std::uint64_t bytes_read() const { return bytes_read_; }

private:
    // Above this an open (with the read of a small file) is slow: a parallel
    // file system's round trip, or a disk's seek from a cold cache.  The
    // reader then opens (and reads) its next files in parallel, on its pool.
    static constexpr double kSlowOpenUs = 100;
    // Past this a file is read in one sequential pass worth a longer
    // read-ahead than the kernel's first (POSIX_FADV_SEQUENTIAL).
    static constexpr std::uint64_t kReadAheadPast = 128 * 1024;
    // Up to this a file is read with its open, on the pool: its read is one
    // request whose round trip (a disk's seek from a cold cache) outweighs
    // its bytes.  Past it the bytes set the pace, and 32 reads at once
    // behind a parallel file system's shared bandwidth went slower than the
    // readers' own, one file after the other: 1,600 JPEGs of 115 KB behind
    // 4 ms (bench/latency --smoke), with a manifest, 0.96 s read with their
    // opens, 0.74 s read by the readers (1.37x and 1.05x of the
    // open-and-read limit); the 0.5-3 KB files of issue 58 gain from it.
    static constexpr std::uint64_t kReadWithOpen = 32 * 1024;
    // A group of small files read with their opens: this many per open.
    static constexpr std::size_t kGroupPerOpen = 8;

    Fd open_checked(std::size_t entry, int dir_fd) const;
    // A file not as planned: told to changes_ (Fd() returned, its pieces
    // zeros), or thrown without.
    Fd not_as_planned(std::size_t entry, const std::string& how) const;
    std::size_t open_ahead(const Chunk& chunk, std::size_t first, char* out);
    // Reads up to length bytes of an open file from its start: fewer at its end.
    std::uint32_t read_whole(int fd, std::size_t entry, char* out, std::uint32_t length) const;
    int dir_fd_for(std::string_view dir);
    // One listing of a directory before its files are opened one by one.
    static void warm_names(const std::string& path);
    std::string path_of(std::size_t entry) const;

    const Plan* plan_;
    // The root dir_fds_ are under: a copy, since the plan it came from may
    // be freed before the next plan is used.
    std::string source_root_;
    unsigned opens_;
    ProvingReads* changes_;
    std::size_t open_entry_ = static_cast<std::size_t>(-1);
    Fd file_;  // the file of open_entry_: it may go on in the next chunk
    std::uint64_t bytes_read_ = 0;
    // Directories opened so far (bounded): files are opened relative to
    // them, one lookup each instead of one per path component.
    std::unordered_map<std::string, Fd> dir_fds_;
    std::string last_dir_;
    int last_dir_fd_ = -1;  // of last_dir_, held in dir_fds_
    // The next files of the chunk being read, opened together, in the order
    // of their pieces (kept between groups: no allocation per group).
    std::vector<std::size_t> group_entries_;
    std::vector<int> group_dirs_;
    std::vector<Fd> group_fds_;
    std::vector<float> group_open_us_;  // how long each open (and read) of the group took
    // A small file read whole with its open (where its bytes go, null when
    // it is not), and how many bytes that read got.
    std::vector<char*> group_dest_;
    std::vector<std::uint32_t> group_got_;
    std::size_t next_in_group_ = 0;
    bool parallel_opens_ = false;       // the last group's opens were slow
    std::unique_ptr<ThreadPool> pool_;  // made when opens first turn out slow
};

}  // namespace dlstage::stager
