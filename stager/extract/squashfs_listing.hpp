// What a squashfs image expands to, learned without unpacking it: from the
// listing `unsquashfs -lln IMAGE` prints, one line per name,
//   -rw-r--r-- 0/0                 1048576 2024-05-21 10:00 squashfs-root/a/f
// and from the inode count in the image's superblock.
//
// The totals may only ever be too high, never too low, whatever the names
// in the image hold.  A name can hold a newline and, after it, text that
// looks like another entry; but every real entry still starts a line, and a
// name cannot hide the start of a line.  So every line that looks like an
// entry is counted: all the real ones, and perhaps some made up by names.
// A line that looks like a file but whose size cannot be read might be a
// real one: it makes the listing unreadable, never ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlstage::stager {

class ListingTotals {
public:
    // Takes the listing as it comes, in chunks of any size.
    void feed(std::string_view chunk);
    // The last line, if it has no newline.
    void finish();

    std::uint64_t file_bytes() const { return file_bytes_; }  // of regular files, every name counted
    std::uint64_t entries() const { return entries_; }        // lines that look like an entry
    // The first line that looks like a file but has no readable size; empty if none.
    const std::string& unreadable_line() const { return unreadable_; }

private:
    void take_line(std::string_view line);

    static constexpr std::size_t kKeep = 256;  // of each line: more than mode, owner and size need
    std::string line_;                         // the start of the line being read
    std::uint64_t file_bytes_ = 0;
    std::uint64_t entries_ = 0;
    std::string unreadable_;
};

// The inode count of a squashfs 4.0 superblock, from an image's first 96
// bytes (or more); nothing if they are not one.
std::optional<std::uint32_t> superblock_inodes(std::string_view head);

}  // namespace dlstage::stager
