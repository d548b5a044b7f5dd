// What an archive entry (a tar member or a file of an unpacked squashfs
// image) may be: the rules that keep a hostile archive inside its
// destination.  Pure string and mode checks, no file system access, so they
// can be tested and fuzzed on their own; extract_tar.cpp and
// extract_squashfs.cpp apply them.
#pragma once

#include <cstddef>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>

namespace dlstage::stager {

// The setuid, setgid and sticky bits: never left on what an archive brings.
inline constexpr mode_t kSpecialBits = S_ISUID | S_ISGID | S_ISVTX;

// The path of a normalized entry below dest ("" is dest itself).
std::string join_path(const std::string& dest, const std::string& normalized);

// Throws Error "unsafe entry 'ENTRY' in SOURCE: WHY".
[[noreturn]] void refuse(const std::string& entry, const std::string& source, const std::string& why);

enum class PathIssue { none, absolute, leaves, dot_dot };

// Checks a path that must stay inside the destination and returns it without
// empty and "." components ("./a//b/" -> "a/b"; "" is the destination itself).
// Any ".." is an issue, even one that stays inside ("a/../b"): no honest
// dataset needs one, and ARCHIVE_EXTRACT_SECURE_NODOTDOT refuses them anyway.
// normalized is meaningful only when there is no issue.
PathIssue inside_path(const std::string& path, std::string& normalized);

// The number of components of a normalized directory ("" is 0).
std::size_t depth_of(const std::string& normalized_dir);

// A symlink may only lead to somewhere inside the destination, judged from
// the directory (normalized, relative to the destination) that holds it.
// Its target may climb with leading ".." but not after a name: "s/../.."
// looks harmless lexically, yet if s is itself a link to "../..", the kernel
// climbs from where s leads, and two links that each stay inside together
// leave.  Refuses (throws) otherwise.
void check_symlink(const std::string& entry, const std::string& link_dir, const std::string& target,
                   const std::string& source);

// Devices, fifos and sockets have no place in a dataset, and a device node
// the job's user owns could open hardware the user must not touch.  type is
// st_mode's S_IFMT part; refuses (throws) all but files, dirs and symlinks.
void check_type(mode_t type, const std::string& entry, const std::string& source);

}  // namespace dlstage::stager
