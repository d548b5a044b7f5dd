// Numbers as users and admins write them, in the configuration, in
// DLSTAGE_* variables and on command lines, parsed strictly: plain decimal
// digits (a decimal: digits '.' digits), whitespace around them ignored.
// No sign, exponent, hex, "inf"/"nan", trailing text or locale: "4x",
// "-1", "1e3", "0x10", "+5" and "1.5.2" are errors, not 4, 0, 1, 0, 5, 1.5.
//
// The parsers throw Error("invalid value 'TEXT': expected ..."); the caller
// prefixes the name of the knob or option ("DLSTAGE_WINDOW: invalid ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlstage {

// a + b, or the largest value when that overflows: sums of sizes users
// chose (a sparse file's apparent size) must never wrap to a small one.
inline constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// Slurm's job ids and node counts are 32-bit.
inline constexpr std::uint64_t kMaxSlurmNumber = 4294967295;

// A whole number from min to max ("16", "007").
std::uint64_t parse_count(std::string_view text, std::uint64_t min, std::uint64_t max);
// A count as a program of ours wrote it (std::to_string): digits only, no
// space or sign, nothing after; false (value unset) for anything else.
bool read_count(std::string_view text, std::uint64_t& value);

// A Slurm job id or node count (1 to kMaxSlurmNumber) as canonical digits,
// without leading zeros ("007" is "7"): checked before it goes into paths
// and srun's options.
std::string slurm_number(std::string_view text);

// A job id as Slurm writes it (digits, no leading zero, within Slurm's
// range): the names of state_dir/jobs/, %j, squeue's and listpids' answers.
bool is_job_id(std::string_view text);

// Job ids as numbers order them ("9" before "10").
bool job_id_less(const std::string& a, const std::string& b);

// A number of seconds from min to max ("5", "0.25").
double parse_seconds(std::string_view text, double min, double max);

// Text that is exactly digits, optionally followed by '.' and digits; the
// building block of the parsers above and of parse_size.
struct Decimal {
    std::uint64_t whole = 0;
    bool whole_overflows = false;                       // more than UINT64_MAX: whole is meaningless
    std::uint64_t fraction = 0;                         // the first kMaxFractionDigits digits after '.'
    unsigned fraction_digits = 0;                       // how many of them (0: no fraction)
    static constexpr unsigned kMaxFractionDigits = 19;  // 10^19 - 1 fits in 64 bits

    double value() const;
};
std::optional<Decimal> scan_decimal(std::string_view text);

}  // namespace dlstage
