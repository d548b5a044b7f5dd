// Unpacking datasets that arrived as tar shards or squashfs images into a
// node-local directory.
//
// The stager runs as the job's user, and archives come from users or dataset
// maintainers, so every entry is treated as hostile: nothing may land outside
// the destination, no link may point out of it, and no device, fifo, socket
// or setuid/setgid/sticky bit may come out of it.
#pragma once

#include <array>
#include <cstdint>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "stager/extract/extract_budget.hpp"

namespace dlstage::stager {

struct ExtractStats {
    std::uint64_t entries = 0;   // entries written (files, dirs, symlinks, hardlinks)
    std::uint64_t bytes = 0;     // file data bytes written
    std::uint64_t stripped = 0;  // entries whose setuid/setgid/sticky bits were removed
};

// Unpacks one tar archive (ustar, pax or gnu; plain or compressed with any
// filter libarchive detects) into dest, an existing directory, like `tar -x`:
// a later archive overwrites files of the same name an earlier one left.
// Keeps permission bits and mtimes, never owners.  Throws dlstage::Error
// naming the archive and the entry for an absolute path or a ".." in a path,
// a link that points out of dest, a hard link to anything but a file already
// extracted from the same archive, a device node, fifo or socket, and
// "cannot read ARCHIVE: ..." for a corrupt or truncated archive.  On an error
// the entries before it stay in dest: the caller removes the whole directory.
// What one shard's extraction leaves to its caller when several shards are
// extracted into one directory at once: the names it wrote (to find shards
// that overlap, where only in-order extraction gives tar -x's result) and
// its directories' times (valid only once no shard writes into them).
struct ShardOutcome {
    std::vector<std::string> names;  // paths of the entries that are not directories
    std::vector<std::pair<std::string, std::array<struct timespec, 2>>> directory_times;
};

// With outcome, the directory times are recorded there instead of applied;
// the caller applies them with restore_directory_times() after all shards.
// With budget, every entry (and every parent directory it makes) and every
// file's logical size is counted there before it is written, and passing a
// limit throws the limit's reason naming the archive.
ExtractStats extract_tar(const std::string& archive, const std::string& dest, ShardOutcome* outcome = nullptr,
                         ExtractBudget* budget = nullptr);

void restore_directory_times(const std::string& dest, const ShardOutcome& outcome);

// Unpacks a squashfs image into dest, which must not exist yet (its parent
// must), with unsquashfs, then checks the result by the rules of extract_tar
// and strips setuid/setgid/sticky bits.  On any error dest is removed again.
// unsquashfs run by anyone but root drops those bits itself, so stripped
// counts only the ones it left.
// Before anything is written: refuses an unsquashfs older than 4.5.1
// (policy::unsquashfs_usable) and, with budget, an image whose listing
// (unsquashfs -lln) and superblock say it expands past a limit.  The check
// of the result counts what unsquashfs wrote against the budget once more.
ExtractStats extract_squashfs(const std::string& image, const std::string& dest, ExtractBudget* budget = nullptr);

// A set of squashfs images (a glob of them) unpacked into dest, which must
// not exist yet: each image as extract_squashfs, in order, into
// `scratch`/N (scratch: a directory of the caller's on dest's file system),
// then its entries moved into dest.  The images must hold disjoint names
// (their directories may be shared): a file or link two images hold is
// refused, naming both.  One budget counts them all.  On any error dest is
// removed again.
ExtractStats extract_squashfs_set(const std::vector<std::string>& images, const std::string& dest,
                                  const std::string& scratch, ExtractBudget* budget = nullptr);

}  // namespace dlstage::stager
