#include "lib/sys/dataset_walk.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <exception>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
[[noreturn]] void cannot_read(const std::string& path, int err)
{
    throw_cannot("read", shown_path(path), err);
}

std::string path_of(const std::string& root, const std::string& rel)
{
    return rel.empty() ? root : root + "/" + rel;
}

const char* special_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a fifo";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "something else";
}

// A directory still to list, and what it was when its parent was listed.
struct PendingDir {
    std::string rel;  // "" for the root
    dev_t dev = 0;
    ino_t ino = 0;
};

class Walk {
public:
    Walk(int root_fd, const std::string& root, const EntryVisitor& visit)
        : root_fd_(root_fd), root_(root), visit_(visit)
    {
    }

    // One directory: its entries visited (not recursing), and the
    // subdirectories found.  Everything is asked relative to the
    // directory's descriptor: on a parallel file system each path
    // component of a full path can cost a metadata round trip, so one
    // lookup per entry is the least there is.
    void list(const PendingDir& dir, std::vector<PendingDir>& subdirs) const
    {
        const Fd fd = open_dir(dir);
        DirStream stream(fd.get());
        if (!stream.valid())
            cannot_read(path_of(root_, dir.rel), errno);
        while (const dirent* d = stream.next()) {
            const std::string path = dir.rel.empty() ? std::string(d->d_name) : dir.rel + "/" + d->d_name;
            struct stat st {};
            if (fstatat(fd.get(), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                cannot_read(path_of(root_, path), errno);
            visit_(FoundEntry{fd.get(), d->d_name, path, st});
            if (S_ISDIR(st.st_mode))
                subdirs.push_back({path, st.st_dev, st.st_ino});
        }
        if (stream.error() != 0)
            cannot_read(path_of(root_, dir.rel), stream.error());
    }

private:
    // The directory's descriptor, opened below the root without following
    // a symlink at its end, and checked to be the directory its parent
    // listed (not one swapped in since, through a symlink further up).
    Fd open_dir(const PendingDir& dir) const
    {
        Fd fd(openat(root_fd_, dir.rel.empty() ? "." : dir.rel.c_str(), kDirFlags));
        if (!fd.valid())
            cannot_read(path_of(root_, dir.rel), errno);
        struct stat st {};
        if (fstat(fd.get(), &st) != 0)
            cannot_read(path_of(root_, dir.rel), errno);
        if (!dir.rel.empty() && (st.st_dev != dir.dev || st.st_ino != dir.ino))
            throw Error(quoted(path_of(root_, dir.rel)) + " changed while being read");
        return fd;
    }

    int root_fd_;
    const std::string& root_;
    const EntryVisitor& visit_;
};

std::string read_link_at(int dir_fd, const char* name, const std::string& path)
{
    std::string target(PATH_MAX, '\0');
    const ssize_t n = readlinkat(dir_fd, name, target.data(), target.size());
    if (n < 0)
        cannot_read(path, errno);
    target.resize(static_cast<std::size_t>(n));
    return target;
}

// What a dataset's entry is, and whether a dataset can hold it.
WalkedEntry dataset_entry(const FoundEntry& found, const std::string& root)
{
    WalkedEntry entry;
    entry.path = found.path;
    entry.st = found.st;
    const mode_t mode = found.st.st_mode;
    if (S_ISLNK(mode)) {
        entry.link_target = read_link_at(found.dir_fd, found.name, path_of(root, found.path));
    } else if (S_ISREG(mode)) {
        // mksquashfs would store an unreadable file as an empty one.
        if (faccessat(found.dir_fd, found.name, R_OK, 0) != 0)
            cannot_read(path_of(root, found.path), errno);
    } else if (!S_ISDIR(mode)) {
        throw Error(quoted(path_of(root, found.path)) + " is " + special_kind(mode) +
                    ", not a file, directory or symlink; datasets cannot hold devices, fifos or sockets");
    }
    return entry;
}
}  // namespace

// The walk is the one metadata-heavy pass over the parallel file system
// (one lstat per entry): several threads work on different directories at
// once, as a file system's metadata servers serve many requests in
// parallel.  Pending directories are kept as paths, not descriptors, so a
// tree of a million directories, or one deeper than the fd limit, needs no
// more descriptors than threads (a path below the root is bounded by
// PATH_MAX: deeper than that, the walk fails with ENAMETOOLONG).
void walk_tree(int root_fd, const std::string& root, unsigned threads, const EntryVisitor& visit)
{
    const Walk walk(root_fd, root, visit);
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<PendingDir> pending{PendingDir{}};
    unsigned busy = 0;
    std::exception_ptr error;
    const auto work = [&] {
        std::vector<PendingDir> subdirs;
        for (;;) {
            PendingDir dir;
            {
                std::unique_lock<std::mutex> lock(mutex);
                changed.wait(lock, [&] { return !pending.empty() || busy == 0 || error; });
                if (pending.empty() || error)
                    return;
                dir = std::move(pending.front());
                pending.pop_front();
                ++busy;
            }
            subdirs.clear();
            std::exception_ptr failed;
            try {
                walk.list(dir, subdirs);
            } catch (...) {
                failed = std::current_exception();
            }
            {
                const std::lock_guard<std::mutex> lock(mutex);
                if (failed && !error)
                    error = failed;
                for (PendingDir& d : subdirs)
                    pending.push_back(std::move(d));
                --busy;
            }
            changed.notify_all();
        }
    };
    run_on_threads(threads, work);
    if (error)
        std::rethrow_exception(error);
}

std::vector<WalkedEntry> walk_dataset(const std::string& root, unsigned threads)
{
    const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid())
        cannot_read(root, errno);
    std::vector<WalkedEntry> all;
    std::mutex mutex;
    walk_tree(root_fd.get(), root, threads, [&](const FoundEntry& found) {
        WalkedEntry entry = dataset_entry(found, root);
        const std::lock_guard<std::mutex> lock(mutex);
        all.push_back(std::move(entry));
    });
    // Bytewise, as std::string compares: a parent sorts before its
    // children, and every rank and every run gets the same order.
    std::sort(all.begin(), all.end(), [](const WalkedEntry& a, const WalkedEntry& b) { return a.path < b.path; });
    return all;
}

}  // namespace dlstage
