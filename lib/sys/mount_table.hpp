// The mounts of this process's mount namespace, as /proc/self/mountinfo
// lists them.
//
// Root code asks this table, not the file system, whether a directory is a
// mount point: reading mountinfo never reaches the file system behind a
// mount, while a stat of a FUSE mount whose server is stopped (or hostile)
// blocks until that server answers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct MountEntry {
    int id = 0;
    int parent_id = 0;
    std::string point;   // absolute, unescaped
    std::string fstype;  // "tmpfs", "fuse.squashfuse", ...

    // FUSE file systems are the only ones a user can mount on a node
    // (through the setuid fusermount), so they are never trusted.
    bool is_fuse() const;
};

// Parses mountinfo text; lines that do not parse are skipped.  The octal
// escapes of the kernel (\040 for a space, \012 for a newline...) are
// decoded, so a point compares with paths as they are.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// The path the kernel gives an open directory, as mountinfo names mount
// points (the admin's symlinks above a tier resolved), or "" if it cannot
// tell (no /proc).
std::string kernel_path(int fd);

class MountTable {
public:
    MountTable() = default;
    explicit MountTable(std::vector<MountEntry> entries) : entries_(std::move(entries)) {}

    // /proc/self/mountinfo now.  Throws Error when it cannot be read.
    static MountTable current();

    // The topmost mount on exactly this path, if any (a copy: the table is
    // often a temporary, MountTable::current().at(path)).
    std::optional<MountEntry> at(std::string_view path) const;

    // Mount points at dir or below it, deepest first (the order in which
    // they can be unmounted one by one).
    std::vector<std::string> points_within(std::string_view dir) const;

    const std::vector<MountEntry>& entries() const { return entries_; }

private:
    std::vector<MountEntry> entries_;
};

}  // namespace dlstage
