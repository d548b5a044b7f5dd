// Which jobs Slurm knows, asked once (`dlstage gc`): one squeue of every
// job in every state, bounded in time.  Whoever asks decides nothing from
// a partial answer: a squeue that fails, hangs or prints a line it cannot
// read is a problem, and the caller then removes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct SlurmJobs {
    std::map<std::string, std::string> states;  // job id -> squeue's state (%T)
    std::string problem;                        // one line; set: Slurm could not be asked
    std::int64_t asked_at = 0;                  // when the question was sent (epoch seconds)
};

// The argv of the question: squeue, every job of every partition and
// state, "JOBID STATE" per line, under coreutils' timeout.
std::vector<std::string> squeue_command(int timeout_seconds);

// squeue's answer parsed; nothing if a line is not "JOBID STATE" with a
// job id as Slurm writes it.
std::optional<std::map<std::string, std::string>> parse_squeue(std::string_view text);

// Runs squeue_command and parses its answer.
SlurmJobs ask_slurm_jobs(int timeout_seconds);

}  // namespace dlstage
