#include "stager/transfer/source_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

void ProvingReads::add(std::size_t entry, const std::string& path, const std::string& how)
{
    std::function<void()> first;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!entries_.insert(entry).second)
            return;  // another reader found it too
        if (entries_.size() == 1) {
            example_ = shown_path(path) + ": " + how;
            first = on_first_change;
        }
    }
    if (first)
        first();
}

std::uint64_t ProvingReads::count() const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
}

std::string ProvingReads::example() const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return example_;
}

Fd SourceReader::not_as_planned(std::size_t entry, const std::string& how) const
{
    if (!changes_)
        throw Error(changed_message(path_of(entry), how));
    changes_->add(entry, path_of(entry), how);
    return Fd();
}

void SourceReader::use_plan(const Plan& plan)
{
    if (plan.source_root != source_root_) {
        dir_fds_.clear();
        last_dir_fd_ = -1;
        source_root_ = plan.source_root;
    }
    plan_ = &plan;
    open_entry_ = static_cast<std::size_t>(-1);  // an entry of the other plan
    file_ = Fd();
}

std::string SourceReader::path_of(std::size_t entry) const
{
    return plan_->source_root + "/" + std::string(plan_->entries.path(entry));
}

// One listing of a directory before its files are opened one by one: a
// client that answers a listing with every entry's attributes (NFS's and
// FUSE's readdirplus) then has each name the opens look up, instead of a
// round trip per file.  A directory that cannot be listed (one the user
// may pass through only) costs nothing more: the opens look names up.
void SourceReader::warm_names(const std::string& path)
{
    // Once per directory and process (a rank's readers share it): the
    // listing is the rank's, not each reader's.  Bounded: forgotten past
    // 65,536 directories, at worst listed again.
    // The others wait for the listing (a round trip or two) rather than
    // look their names up meanwhile.
    static std::mutex mutex;
    static std::unordered_set<std::string> listed;
    const std::lock_guard<std::mutex> lock(mutex);
    if (listed.size() >= 65536)
        listed.clear();
    if (!listed.insert(path).second)
        return;
    const Fd listing(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DirStream stream(listing.get());
    while (stream.valid() && stream.next()) {
    }
}

int SourceReader::dir_fd_for(std::string_view dir)
{
    // A chunk's files lie in one or two directories (the plan is sorted by
    // path): the last one answers nearly every time, without a hash.
    if (last_dir_fd_ >= 0 && dir == last_dir_)
        return last_dir_fd_;
    std::string key(dir);
    auto it = dir_fds_.find(key);
    if (it == dir_fds_.end()) {
        const std::string path = dir.empty() ? plan_->source_root : plan_->source_root + "/" + key;
        Fd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!fd.valid())
            throw_cannot("read", path, errno);
        if (changes_ && changes_->list_directories)  // no name of the plan is known here yet
            warm_names(path);
        it = dir_fds_.emplace(key, std::move(fd)).first;
    }
    last_dir_ = std::move(key);
    last_dir_fd_ = it->second.get();
    return last_dir_fd_;
}

// Opens in parallel pay on a parallel file system, where each is a round
// trip of a millisecond; on a local or cached one an open takes
// microseconds, less than handing it to another thread.  Each open is timed
// by itself: judged by the group's wall time, one preemption of a
// millisecond on a loaded node turned parallel opens on for good (in
// parallel, a group's wall time on two busy cores never fell back under the
// threshold), and the handoffs to the pool cost more than the opens.
bool opens_in_parallel(bool parallel_now, std::vector<float>& open_us, double slow_us)
{
    return slow_by_median(parallel_now, open_us.data(), open_us.size(), slow_us);
}

// Safe on several threads at once: it touches nothing of the reader's.
// Nothing is allocated for a file that is as planned: at 1.28 M files,
// strings made for messages never said were a cost of their own.
Fd SourceReader::open_checked(std::size_t entry, int dir_fd) const
{
    Fd fd(::openat(dir_fd, BaseNameZ(plan_->entries.path(entry)).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid() && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
        return not_as_planned(entry, errno == ELOOP ? "no longer a regular file" : "gone");
    if (!fd.valid())
        throw_cannot("read", path_of(entry), errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0)
        throw_cannot("read", path_of(entry), errno);
    const EntryList::Record& planned = plan_->entries.record(entry);
    if (!S_ISREG(st.st_mode))
        return not_as_planned(entry, "no longer a regular file");
    if (!as_planned(planned.size, planned.mtime_sec, planned.mtime_nsec, st))
        return not_as_planned(entry, how_changed(plan_->entries[entry], st));
    if (planned.size > kReadAheadPast)
        posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd;
}

// Opens the files of the pieces from `first` on that are not open yet, all
// at once.  A small file (kReadWithOpen) whose piece is the whole file is
// read with its open, into its place in out (out: where piece `first`
// goes), and closed: from a cold cache the read is a disk's seek, and a
// walk just looked the inode up, so the open alone is fast while the read
// is not (issue 58: one read at a time per reader).  The others stay open for read(), at most
// opens_ of them (and the one the reader goes on with) however small the
// files of a chunk are; a group holds up to kGroupPerOpen times as many
// small files, so that a round of the pool (a wake of every thread)
// serves more than one file each.  Directories are looked up first, on
// this thread (their table is the reader's); the opens, their checks and
// the reads then run in parallel when the last group's were slow.
// Returns the end of the pieces whose files are now open or read.
std::size_t SourceReader::open_ahead(const Chunk& chunk, std::size_t first, char* out)
{
    // Cleared here, never while a group's directories are in use: at most
    // kMaxOpenDirs plus one group's directories are open.  A chunk's files
    // lie in one or two directories; a rank's readers together must stay
    // well under a job's 1,024 descriptors (with 256 each, four readers
    // of 256-file chunks spread over ImageNet's 1,000 classes ran out).
    constexpr std::size_t kMaxOpenDirs = 32;
    if (dir_fds_.size() >= kMaxOpenDirs) {
        dir_fds_.clear();
        last_dir_fd_ = -1;
    }
    std::vector<std::size_t>& entries = group_entries_;
    std::vector<int>& dirs = group_dirs_;
    std::vector<char*>& dest = group_dest_;
    entries.clear();
    dirs.clear();
    dest.clear();
    const std::size_t most_open = std::max(1u, opens_);
    std::size_t left_open = 0;
    std::size_t end = first;
    for (char* at = out; end < chunk.pieces.size(); at += chunk.pieces[end++].length) {
        const Piece& piece = chunk.pieces[end];
        if (piece.entry == open_entry_ || (!entries.empty() && entries.back() == piece.entry))
            continue;
        const bool small_whole = piece.offset == 0 && piece.length == plan_->entries.file_size(piece.entry) &&
                                 piece.length <= kReadWithOpen;
        if (entries.size() == most_open * kGroupPerOpen || (!small_whole && left_open == most_open))
            break;
        left_open += small_whole ? 0 : 1;
        entries.push_back(piece.entry);
        dirs.push_back(dir_fd_for(parent_in_tree(plan_->entries.path(piece.entry))));
        dest.push_back(small_whole ? at : nullptr);
    }
    std::vector<Fd>& fds = group_fds_;
    fds.clear();
    fds.resize(entries.size());
    std::vector<float>& took = group_open_us_;
    took.assign(entries.size(), 0.0f);
    group_got_.assign(entries.size(), 0);
    const auto open_one = [&](std::size_t i) {
        using namespace std::chrono;
        const auto start = steady_clock::now();
        fds[i] = open_checked(entries[i], dirs[i]);
        if (dest[i] && fds[i].valid()) {
            const auto size = static_cast<std::uint32_t>(plan_->entries.file_size(entries[i]));
            group_got_[i] = read_whole(fds[i].get(), entries[i], dest[i], size);
            if (group_got_[i] == size)
                fds[i] = Fd();  // all read: read() wants nothing more of it
        }
        took[i] = duration<float, std::micro>(steady_clock::now() - start).count();
    };
    if (entries.size() > 1 && parallel_opens_) {
        if (!pool_)
            pool_ = std::make_unique<ThreadPool>(opens_);
        pool_->for_each_index(entries.size(), open_one);
    } else {
        for (std::size_t i = 0; i < entries.size(); ++i)
            open_one(i);
    }
    if (entries.size() > 1)
        parallel_opens_ = opens_in_parallel(parallel_opens_, took, kSlowOpenUs);
    next_in_group_ = 0;
    return end;
}

std::uint32_t SourceReader::read_whole(int fd, std::size_t entry, char* out, std::uint32_t length) const
{
    std::uint32_t done = 0;
    while (done < length) {
        const ssize_t n = ::pread(fd, out + done, length - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("read", path_of(entry), errno);
        if (n == 0)
            break;  // shorter than planned: read() tells it
        done += static_cast<std::uint32_t>(n);
    }
    return done;
}

void SourceReader::read(const Chunk& chunk, char* out)
{
    if (changes_ && changes_->count() > 0) {  // the copy is to be discarded: read no more
        std::memset(out, 0, chunk.bytes);
        return;
    }
    for (std::size_t next = 0, opened_until = 0; next < chunk.pieces.size(); ++next) {
        if (next == opened_until)
            opened_until = open_ahead(chunk, next, out);
        const Piece& piece = chunk.pieces[next];
        std::uint64_t done = 0;  // of the piece: read with its open
        if (piece.entry != open_entry_) {
            // The group holds the files in the order their pieces come.
            if (next_in_group_ >= group_entries_.size() || group_entries_[next_in_group_] != piece.entry)
                throw Error("internal error: the source reader opened " + path_of(piece.entry) + " out of order");
            done = group_got_[next_in_group_];
            file_ = std::move(group_fds_[next_in_group_++]);
            open_entry_ = piece.entry;
        }
        const int fd = file_.get();
        if (fd < 0 && done < piece.length)  // not as planned, told: zeros, and on
            std::memset(out, 0, piece.length);
        while (fd >= 0 && done < piece.length) {
            const ssize_t n = ::pread(fd, out + done, piece.length - done, static_cast<off_t>(piece.offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                throw_cannot("read", path_of(piece.entry), errno);
            if (n == 0) {
                not_as_planned(piece.entry, "shorter than its planned " +
                                                std::to_string(plan_->entries[piece.entry].size) +
                                                " bytes while being read");
                file_ = Fd();  // its other pieces: zeros too
                std::memset(out + done, 0, piece.length - done);
                break;
            }
            done += static_cast<std::uint64_t>(n);
        }
        out += piece.length;
        bytes_read_ += piece.length;
    }
}

}  // namespace dlstage::stager
