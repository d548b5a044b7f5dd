#include "stager/transfer/tree_writer.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

void TreeWriter::write_all(int fd, const char* data, std::uint64_t length, std::uint64_t offset,
                           std::size_t entry) const
{
    std::uint64_t done = 0;
    while (done < length) {
        const ssize_t n = ::pwrite(fd, data + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("write", dest_path(entry), errno);  // ENOSPC lands here, naming the file
        done += static_cast<std::uint64_t>(n);
    }
}

void apply_times(const std::string& path, std::int64_t sec, std::uint32_t nsec)
{
    const struct timespec times[2] = {{sec, static_cast<long>(nsec)}, {sec, static_cast<long>(nsec)}};
    if (utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
        throw_cannot("set the time of", path, errno);
}

namespace {
// A planned entry's mtime as futimens and utimensat take it (atime too).
std::array<struct timespec, 2> planned_times(const EntryList::Record& e)
{
    const struct timespec t = {e.mtime_sec, static_cast<long>(e.mtime_nsec)};
    return {t, t};
}

mode_t process_umask()
{
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}
}  // namespace

TreeWriter::TreeWriter(const Plan& plan, std::string dest, WriterOptions options)
    : plan_(plan), dest_(std::move(dest)), options_(options), umask_(process_umask()),
      written_(new std::atomic<std::uint64_t>[plan.entries.size()])
{
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        written_[i] = 0;
    for (const HeldPrefix& held : plan.held_prefixes)
        written_[held.entry] = held.bytes;
}

void TreeWriter::create_skeleton()
{
    if (!options_.dest_exists && !options_.continues && mkdir(dest_.c_str(), 0700) != 0)
        throw_cannot("create", dest_, errno);
    const EntryList& entries = plan_.entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        // Directories stay writable (0700) until finish(): a read-only
        // directory in the source must still receive its files.
        if (entries.type(i) == EntryType::Dir && mkdir(dest_path(i).c_str(), 0700) != 0 &&
            (errno != EEXIST || !options_.continues))
            throw_cannot("create", dest_path(i), errno);
        if (entries.type(i) == EntryType::File && entries.file_size(i) == 0)
            finish_file(i, open_for_write(i, true));
    }
}

// The destination is this job's private, freshly created directory: the
// pieces of one file may arrive in any order, in any thread, so each may
// be the one that creates it.
Fd TreeWriter::open_for_write(std::size_t entry, bool create_new)
{
    const std::string path = dest_path(entry);
    const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (create_new ? O_EXCL : 0);
    Fd fd(::open(path.c_str(), flags, 0600));
    if (!fd.valid())
        throw_cannot("create", path, errno);
    return fd;
}

void TreeWriter::finish_file(std::size_t entry, Fd fd)
{
    const EntryList::Record& e = plan_.entries.record(entry);
    const std::string path = dest_path(entry);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0)
        throw_cannot("check", path, errno);
    if (static_cast<std::uint64_t>(st.st_size) != e.size)
        throw Error(path + " has " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(e.size));
    // Permission bits only: nothing staged carries setuid/setgid/sticky.
    if (fchmod(fd.get(), e.mode & 0777 & options_.file_mode_mask) != 0 ||
        (options_.keep_times && futimens(fd.get(), planned_times(e).data()) != 0))
        throw_cannot("set mode and time of", path, errno);
    if (const int err = fd.close())
        throw_cannot("close", path, err);
}

// A chunk's files lie in one or two directories (the plan is sorted by
// path): each is looked up once per chunk, and its files by their name
// alone.
int TreeWriter::ParentDirs::fd_for(const TreeWriter& writer, std::size_t entry)
{
    const std::string_view parent = parent_in_tree(writer.plan_.entries.path(entry));
    if (dir_.valid() && parent == name_)
        return dir_.get();
    name_ = parent;
    const std::string path = parent.empty() ? writer.dest_ : writer.dest_ + "/" + std::string(parent);
    dir_ = Fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_.valid())
        throw_cannot("open", path, errno);
    return dir_.get();
}

// A file whose bytes are all in this one piece (every file of a tree of
// small files): created with its final mode when the umask leaves it
// whole, written and closed; its size is what write_all wrote to the new
// file.  Four calls, as `tar -x` makes: at a million files the two a
// general finish adds (fstat, fchmod) cost seconds.
void TreeWriter::write_whole_file(std::size_t entry, int dir_fd, const char* data)
{
    const EntryList::Record& e = plan_.entries.record(entry);
    const mode_t mode = static_cast<mode_t>(e.mode & 0777 & options_.file_mode_mask);
    const bool mode_at_create = (mode & umask_) == 0;
    Fd fd(::openat(dir_fd, BaseNameZ(plan_.entries.path(entry)).c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_at_create ? mode : 0600));
    if (!fd.valid())
        throw_cannot("create", dest_path(entry), errno);
    write_all(fd.get(), data, e.size, 0, entry);
    if ((!mode_at_create && fchmod(fd.get(), mode) != 0) ||
        (options_.keep_times && futimens(fd.get(), planned_times(e).data()) != 0))
        throw_cannot("set mode and time of", dest_path(entry), errno);
    if (const int err = fd.close())
        throw_cannot("close", dest_path(entry), err);
}

void TreeWriter::write(const Chunk& chunk, const char* data)
{
    ParentDirs parents;
    for (const Piece& piece : chunk.pieces) {
        const std::uint64_t size = plan_.entries.file_size(piece.entry);
        if (piece.length == size) {
            write_whole_file(piece.entry, parents.fd_for(*this, piece.entry), data);
            data += piece.length;
            bytes_written_ += piece.length;
            written_[piece.entry] = size;
            continue;
        }
        Fd fd = open_for_write(piece.entry, false);
        write_all(fd.get(), data, piece.length, piece.offset, piece.entry);
        if (options_.piece_written)
            options_.piece_written(plan_, piece.entry, piece.offset, data, piece.length);
        data += piece.length;
        bytes_written_ += piece.length;
        // Counted after the write: the thread that sees the total reach the
        // size knows every byte of the file is on disk.
        if (written_[piece.entry].fetch_add(piece.length) + piece.length == size) {
            finish_file(piece.entry, std::move(fd));
            continue;
        }
        if (options_.shared && piece.offset + piece.length == size) {
            // Its other pieces are other ranks': finished once all wrote.
            std::lock_guard<std::mutex> lock(split_mutex_);
            split_.push_back(piece.entry);
        }
        if (const int err = fd.close())
            throw_cannot("close", dest_path(piece.entry), err);
    }
}

void TreeWriter::finish_split_files()
{
    for (const std::size_t entry : split_) {
        if (written_[entry] == plan_.entries.file_size(entry))
            continue;  // this rank wrote all its pieces after all, and finished it then
        const std::string path = dest_path(entry);
        Fd fd(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd.valid())
            throw_cannot("open", path, errno);
        finish_file(entry, std::move(fd));  // checks the size all ranks wrote
    }
    split_.clear();
}

TreeWriter::Left TreeWriter::left_to_write() const
{
    Left left;
    const EntryList& entries = plan_.entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::uint64_t size = entries.file_size(i);
        const std::uint64_t written = written_[i].load();
        if (size > written) {
            left.bytes += size - written;
            left.files += 1;
        }
    }
    return left;
}

void TreeWriter::finish()
{
    const EntryList& entries = plan_.entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const EntryList::Record& e = entries.record(i);
        if (e.type == EntryType::File && !options_.shared && written_[i] != e.size)
            throw Error(dest_path(i) + " received " + std::to_string(written_[i]) + " of " + std::to_string(e.size) +
                        " bytes");
        if (e.type == EntryType::Symlink) {
            if (symlink(std::string(entries.target(i)).c_str(), dest_path(i).c_str()) != 0)
                throw_cannot("create symlink", dest_path(i), errno);
            if (options_.keep_times)
                apply_times(dest_path(i), e.mtime_sec, e.mtime_nsec);
        }
    }
    set_dir_modes(dest_, plan_, options_.keep_times);
}

void set_dir_modes(const std::string& dest, const Plan& plan, bool keep_times)
{
    // Deepest first: setting a directory's mode or time must come after
    // everything inside it has been created.
    const EntryList& entries = plan.entries;
    for (std::size_t i = entries.size(); i-- > 0;) {
        if (entries.type(i) != EntryType::Dir)
            continue;
        const std::string path = dest + "/" + std::string(entries.path(i));
        const EntryList::Record& e = entries.record(i);
        const std::array<struct timespec, 2> times = planned_times(e);
        Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!dir.valid() || fchmod(dir.get(), e.mode & 0777) != 0 ||
            (keep_times && futimens(dir.get(), times.data()) != 0))
            throw_cannot("set the mode of", path, errno);
    }
}

}  // namespace dlstage::stager
