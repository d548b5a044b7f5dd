// Reading a whole small file the caller has opened.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <sys/stat.h>

namespace dlstage {

// Everything fd still holds, at most `limit` bytes.  Throws Error
// "cannot read SHOWN: ..." on a read error, and "SHOWN is larger than
// LIMIT bytes" past the limit.
std::string read_all(int fd, std::size_t limit, const std::string& shown);

// A small file someone else may have written (a record, a lock): `name` in
// dir_fd (AT_FDCWD: a path), opened without following a symlink at its end
// and without blocking on a fifo; it must be a regular file of at most
// `limit` bytes, and when `must_own` is given that uid's (checked before
// anything is read: a huge file someone else planted is not loaded).
// Nothing when it does not exist; Error naming `shown` otherwise.
struct SmallFile {
    std::string content;
    struct stat st {};
};
std::optional<SmallFile> read_small_file_at(int dir_fd, const std::string& name, const std::string& shown,
                                            std::size_t limit, std::optional<uid_t> must_own = std::nullopt);

// The same for root reading a file in a user's directory: `name` must be
// on dir_fd's file system (a FUSE file system mounted on a file is never
// asked: the name is looked up with O_PATH and examined with a stat its
// server does not answer, then that very file is opened), never a symlink,
// a fifo or a device.  dir_fd is the directory itself (not an O_PATH fd of
// a mount point).
std::optional<SmallFile> read_small_file_in(int dir_fd, const std::string& name, const std::string& shown,
                                            std::size_t limit);

}  // namespace dlstage
