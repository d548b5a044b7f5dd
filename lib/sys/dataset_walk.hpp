// The one walk of a dataset directory, for `dlstage pack` and for the
// stager's plan: every entry below the root with its lstat, in path order.
//
// It is also the one place that decides what an entry means: a symlink is
// an entry of its own (its target read, never followed); a device, fifo or
// socket is refused; a file the caller cannot read, or a directory it cannot
// list, is an error found now rather than after hours of copying.
#pragma once

#include <string>
#include <sys/stat.h>
#include <vector>

namespace dlstage {

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

}  // namespace dlstage
