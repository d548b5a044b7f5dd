// Byte sizes as admins write them ("100G", "1.5TiB", "512M") and tier
// limits that are either absolute or a share of the file system ("50%").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlstage {

// Parse a size: a number with an optional unit K, M, G, T, P (powers of
// 1024, as in Slurm), optionally followed by "B" or "iB".  Throws Error with
// a message that says what is accepted.
std::uint64_t parse_size(std::string_view text);

// "1.5 GiB", "512 B": for messages and listings.
std::string format_size(std::uint64_t bytes);

// A tier's max_bytes: none, an absolute byte count, or a percentage of the
// tier's file system (resolved on the node, where statvfs can answer).
struct ByteLimit {
    enum class Kind { None, Bytes, Percent };
    Kind kind = Kind::None;
    std::uint64_t bytes = 0;
    double percent = 0.0;

    static ByteLimit parse(std::string_view text);  // "50%", "100G"
    static ByteLimit of_bytes(std::uint64_t bytes);

    bool is_set() const { return kind != Kind::None; }
    // The limit in bytes on a file system of fs_bytes, or nothing when it
    // cannot be known (a percentage without the file system's size).
    std::optional<std::uint64_t> resolve(std::optional<std::uint64_t> fs_bytes) const;
    std::string str() const;
};

}  // namespace dlstage
