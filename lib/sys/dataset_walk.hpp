// The one walk of a directory tree by fd, for `dlstage pack`, the stager's
// plan and the check of what unsquashfs wrote: every entry below the root
// with its lstat, handed to a visitor, never following a symlink below the
// root, with no more descriptors open than twice the threads at any depth
// a path (PATH_MAX) below the root can name.  The entries of one directory
// are stat'ed by all threads at once: on a parallel file system each stat
// is a metadata round trip of milliseconds, and a flat directory of
// thousands of images is the common case.
//
// walk_dataset is also the one place that decides what a dataset's entry
// means: a symlink is an entry of its own (its target read, never
// followed); a device, fifo or socket is refused; a file the caller cannot
// read, or a directory it cannot list, is an error found now rather than
// after hours of copying.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace dlstage {

// An entry as the walk finds it: the directory it is in (open as dir_fd for
// the visit only), its name there, its path relative to the root (without
// "./") and its lstat.
struct FoundEntry {
    int dir_fd;
    const char* name;
    const std::string& path;
    const struct stat& st;
};

// Called once for every entry below the root; a directory's entries come
// after its own visit (which may change its mode).  With threads > 1 it is
// called from several threads at once.  What it throws ends the walk.
using EntryVisitor = std::function<void(const FoundEntry&)>;

// Walks the directory open as root_fd (root: its path, for messages) with
// up to `threads` threads (walk_threads_for) listing directories and
// stat'ing their entries (with fstatat relative to the directory's
// descriptor) in parallel, in no set order.
// Pending directories are kept as paths below root_fd and opened without
// following a symlink at their end, each checked to be the directory its
// parent listed.  Throws Error "cannot read PATH: ..." naming the entry.
void walk_tree(int root_fd, const std::string& root, unsigned threads, const EntryVisitor& visit);

// A directory directly below a walk's root, as its root's listing saw it.
struct SubtreeStart {
    std::string name;
    dev_t dev = 0;
    ino_t ino = 0;
};
// The same walk, of what lies below the given directories of the root
// only (not the directories themselves): a staging that walks a tree in
// parts (stager/plan/plan_segments), paths still relative to the root.  Each
// directory is checked to be the one listed (dev and inode).
void walk_below(int root_fd, const std::string& root, const std::vector<SubtreeStart>& dirs, unsigned threads,
                const EntryVisitor& visit);

// Names one listing of a directory below a walk's root gave, not stat'ed
// yet: a staging that walks a large directory in slices (stager/
// plan_segments) stats each slice while the one before it is read.
struct NamesIn {
    std::string dir;  // relative to the root; "" for the root itself
    dev_t dev = 0;    // the directory as its parent's listing saw it
    ino_t ino = 0;    // (not checked for the root)
    std::vector<std::string> names;
};
// The same walk, of the given names (and of what lies below any that is a
// directory by now), spread over the threads; each directory is opened by
// the thread that takes its names (no more open than a walk's) and checked
// to be the one listed (dev and inode).  Paths relative to the root.
void walk_names(int root_fd, const std::string& root, const std::vector<NamesIn>& names, unsigned threads,
                const EntryVisitor& visit);

// A stat slower than this (a batch's median, slow_by_median in
// lib/sys/parallel) is a round trip to a server: a parallel file system's
// metadata server, a cold disk.  The walk hides it behind all its threads.
constexpr double kSlowStatUs = 100;
// The threads a walk lets work, of `most`: all while its stats are slow; as
// many as `cpus` (two at least) while they are fast.  On a fast tree more
// threads than cores only contend: 1.28 M files in the page cache on 2
// cores took 6.8-7.1 s on 16 threads, 5.2-5.4 s on 2.
unsigned walk_threads_for(bool slow, unsigned most, unsigned cpus);

struct WalkedEntry {
    std::string path;         // relative to the root, without "./"
    struct stat st {};        // as lstat saw it
    std::string link_target;  // symlinks only
};

// Walks root (a directory; a symlink to one is followed, nothing below it
// is) with `threads` threads listing directories in parallel.  Entries are
// sorted bytewise by path, so each directory comes before its contents and
// the same tree always gives the same list.  Throws Error naming the entry.
std::vector<WalkedEntry> walk_dataset(const std::string& root, unsigned threads = 16);

// How many entries every walk in this process has found so far: a progress
// line can count a walk that a caller further down started.
std::uint64_t entries_walked();

}  // namespace dlstage
