// How dlstage's programs speak to a person: one line, "dlstage: " first,
// control bytes and bidi marks shown escaped (a path may hold anything).
//
// The stager's lines reach the user through srun, which forwards each
// rank's stderr: every line goes out in one write(2), so lines of ranks
// and threads never interleave mid-line.  The plugin logs through Slurm
// (slurm_error, slurm_info) with message_line().
#pragma once

#include <string>
#include <string_view>

namespace dlstage {

// What every line dlstage says starts with.
inline constexpr const char* kMessagePrefix = "dlstage: ";

// "dlstage: MESSAGE" without a newline, MESSAGE made printable.
std::string message_line(std::string_view message);

// message_line(message) and a newline on stderr.
void say(std::string_view message);

// say() with a printf format.
void sayf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace dlstage
