// What Slurm says of jobs now, asked once: one squeue of every job in every
// state (its state, array ids and nodes), and for `dlstage gc` one
// `scontrol listpids` for the jobs with processes on this node (their
// slurmstepd still here: a job slurmctld is done with may not be done on
// this node), each bounded in time.  Nobody decides from a partial
// answer: a command that fails, hangs or prints a line that cannot be read
// leaves asked = false with the problem, and callers then say "unknown"
// (status) or remove nothing (gc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct SlurmJob {
    std::string job_id;         // the job's own id (%A): state_dir/jobs/<this>
    std::string array_job_id;   // "" unless an array task (%F)
    std::string array_task_id;  // "" unless an array task (%K)
    std::string state;          // RUNNING, PENDING, COMPLETED, ...
    std::string nodelist;       // n[1-3], "" while pending
};

struct SlurmJobs {
    bool asked = false;                    // squeue (and listpids, if asked for) answered
    std::string problem;                   // one line: why not, when !asked
    std::map<std::string, SlurmJob> jobs;  // by job_id
    std::set<std::string> here;            // jobs with processes on this node (with_local_pids)
    std::int64_t asked_at = 0;             // when the question was sent (epoch seconds)

    const SlurmJob* find(const std::string& job_id) const;
};

// squeue's fields, as ask_slurm asks for them.
inline constexpr const char* kSqueueFormat = "%A|%F|%K|%T|%N";

// argv under coreutils' timeout: TERM after `seconds`, KILL 5 s later.
std::vector<std::string> bounded_command(std::vector<std::string> argv, int seconds);

// The argv of the question: squeue, every job of every partition (-a:
// hidden ones too) and state (-t all: pending, completing, and ended jobs
// Slurm still remembers), kSqueueFormat per line, under coreutils' timeout.
std::vector<std::string> squeue_command(int timeout_seconds);

// squeue's answer parsed; nothing if a line is not five fields with a job
// id as Slurm writes it.  An array task's %F/%K of "N/A" become "".
std::optional<std::map<std::string, SlurmJob>> parse_squeue(std::string_view text);

// The argv of the local question: this node's job steps and their pids.
std::vector<std::string> listpids_command(int timeout_seconds);

// scontrol listpids' answer (a header, then "PID JOBID STEPID ..." rows):
// the job ids; nothing if a row has no job id where it should.
std::optional<std::set<std::string>> parse_listpids(std::string_view text);

// Runs a Slurm command under timeout(1) (argv starts with it): its
// stdout, or nothing with `problem` set (one line: it failed, or did not
// answer within timeout_seconds).  A status 1 whose output holds
// quiet_failure counts as an empty answer, and one whose every stderr
// line is harmless_line counts as its stdout.  The command gets `env` if
// given, else our environment.
std::optional<std::string> slurm_answer(const std::vector<std::string>& argv, const std::string& name,
                                        int timeout_seconds, std::string& problem, const char* quiet_failure = nullptr,
                                        const std::vector<std::string>* env = nullptr,
                                        const char* harmless_line = nullptr);

// What scontrol listpids says of a step socket whose slurmstepd is gone (a
// node that crashed leaves them in its spool directory): that step has no
// processes here, and the others are listed.
inline constexpr const char* kStaleStepSocket = "Unable to connect to slurmstepd: Connection refused";

// Slurm's state and reason of each job of `ids` it still knows, from
// squeue's "%A|%T|%r" lines (a job it has forgotten is missing).
struct JobState {
    std::string state;   // PENDING, RUNNING, COMPLETED, CANCELLED, ...
    std::string reason;  // Priority, JobHeldAdmin, None, ...
};
std::map<std::string, JobState> parse_job_states(std::string_view squeue);

// Asks squeue for them (with `env`, if given); nothing when it did not
// answer within timeout_seconds (`problem` says why), every job missing
// when Slurm knows none of them.
std::optional<std::map<std::string, JobState>> ask_job_states(const std::vector<std::string>& ids, int timeout_seconds,
                                                              std::string& problem,
                                                              const std::vector<std::string>* env = nullptr);

// A duration as squeue prints it (%l, %L): "M:SS", "H:MM:SS" or
// "D-HH:MM:SS", in seconds (a time left may be negative: "-0:05");
// nothing for UNLIMITED, NOT_SET, INVALID or anything else.
std::optional<std::int64_t> parse_slurm_duration(std::string_view text);

// A time as squeue prints it (%e, %S: "2026-12-02T19:31:31", local time),
// in epoch seconds; nothing for Unknown, N/A, NONE or anything else.
std::optional<std::int64_t> parse_slurm_time(std::string_view text);

// A running job's time limit and the time left until its end, in
// seconds, from squeue's "%l|%L|%e|%T" at `now`: the end time (%e) when it
// can be read, as slurmctld ends the job by it (an EndTime an admin set
// makes %L, which counts from the limit in whole minutes, say more), else
// %L; nothing when neither can be read or the job has no limit
// (UNLIMITED).  With its state: a job cancelled a moment ago has its end
// time now, and is not near its limit.
struct JobClock {
    std::int64_t limit = 0;
    std::int64_t left = 0;
    std::string state;  // %T: RUNNING, COMPLETING, CANCELLED, ...
};
std::optional<JobClock> job_clock_in(std::string_view squeue, std::int64_t now);

// Asks squeue (with `env`, if given); nothing when it did not answer
// within timeout_seconds or the clock cannot be read.
std::optional<JobClock> ask_job_clock(const std::string& job_id, int timeout_seconds,
                                      const std::vector<std::string>* env = nullptr);

// Asks squeue (and, with_local_pids, scontrol listpids on this node).
SlurmJobs ask_slurm(int timeout_seconds, bool with_local_pids = false);

}  // namespace dlstage
