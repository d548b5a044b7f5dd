// Which jobs Slurm knows, asked once (`dlstage gc`): one squeue of every
// job in every state, and one `scontrol listpids` for the jobs with
// processes on this node (their slurmstepd still here: a job slurmctld has
// done with may not be done on this node), each bounded in time.  Whoever
// asks decides nothing from a partial answer: a command that fails, hangs
// or prints a line it cannot read is a problem, and the caller then
// removes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct SlurmJobs {
    std::map<std::string, std::string> states;  // job id -> squeue's state (%T)
    std::set<std::string> here;                 // jobs with processes on this node
    std::string problem;                        // one line; set: Slurm could not be asked
    std::int64_t asked_at = 0;                  // when the question was sent (epoch seconds)
};

// The argv of the question: squeue, every job of every partition and
// state, "JOBID STATE" per line, under coreutils' timeout.
std::vector<std::string> squeue_command(int timeout_seconds);

// squeue's answer parsed; nothing if a line is not "JOBID STATE" with a
// job id as Slurm writes it.
std::optional<std::map<std::string, std::string>> parse_squeue(std::string_view text);

// The argv of the local question: this node's job steps and their pids.
std::vector<std::string> listpids_command(int timeout_seconds);

// scontrol listpids' answer (a header, then "PID JOBID STEPID ..." rows):
// the job ids; nothing if a row has no job id where it should.
std::optional<std::set<std::string>> parse_listpids(std::string_view text);

// Runs both commands and parses their answers.
SlurmJobs ask_slurm_jobs(int timeout_seconds);

}  // namespace dlstage
