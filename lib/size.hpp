// Byte sizes as admins write them ("100G", "1.5TiB", "512M") and tier
// limits that are either absolute or a share of the file system ("50%").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlstage {

// Parse a size, strictly: a number (digits, or digits '.' digits, see
// lib/number.hpp) and an optional unit K, M, G, T or P (either case; powers
// of 1024, as in Slurm), optionally followed by "B" or "iB"; or the unit "B"
// alone.  Whitespace may surround the number and the unit: "512M", "1.5G",
// "100 GiB", "4096", "7B".  A decimal needs a unit ("0.5" bytes is no size)
// and is rounded to whole bytes.  Signs, exponents, hex, trailing text and
// sizes beyond 2^64 - 1 bytes throw Error with a message that says what is
// accepted.
std::uint64_t parse_size(std::string_view text);

// A size as sbatch --mem takes it (a number, MiB, or with a unit K, M, G,
// T), in MiB rounded up; nothing when it is not one.
std::optional<std::uint64_t> slurm_memory_mib(std::string_view text);

// The same, and from min to max bytes ("expected a size from 4.0 KiB to ...").
std::uint64_t parse_size(std::string_view text, std::uint64_t min, std::uint64_t max);

// A share written as a percentage, "90%" or "87.5 %" (more than 0% and at
// most 100%), as a fraction (0.9); throws Error naming what is accepted.
// The same percentages max_bytes takes.
double parse_share(std::string_view text);

// "1.5 GiB", "512 B": for messages and listings.
std::string format_size(std::uint64_t bytes);

// A transfer rate as the stager and pack print it: "0.49 GB/s" (10^9).
std::string format_rate(std::uint64_t bytes, double seconds);

// A size as Slurm prints memory (squeue, sinfo, sacct): powers of 1024 in
// the largest unit that keeps the number at least 1, no space, whole
// numbers bare and others with two decimals: "512", "4K", "150G", "1.50T".
std::string slurm_size(std::uint64_t bytes);

// A tier's max_bytes: none, an absolute byte count, or a percentage of the
// tier's file system (resolved on the node, where statvfs can answer).
struct ByteLimit {
    enum class Kind { None, Bytes, Percent };
    Kind kind = Kind::None;
    std::uint64_t bytes = 0;
    double percent = 0.0;

    // "100G" as parse_size, or a percentage greater than 0 and at most 100
    // ("50%", "12.5 %"); throws Error.
    static ByteLimit parse(std::string_view text);
    static ByteLimit of_bytes(std::uint64_t bytes);

    bool is_set() const { return kind != Kind::None; }
    // The limit in bytes on a file system of fs_bytes, or nothing when it
    // cannot be known (a percentage without the file system's size).
    std::optional<std::uint64_t> resolve(std::optional<std::uint64_t> fs_bytes) const;
    std::string str() const;
};

}  // namespace dlstage
