// Running another program: the one process runner of the plugin, the
// stager and the command, and the one text for how a process ended.
//
// No shell is involved.  The stager has threads and the plugin runs inside
// slurmstepd, so the child calls only async-signal-safe functions between
// fork and exec (the PATH search is done before the fork), and a failed
// exec comes back to the caller through a close-on-exec pipe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include "lib/sys/fd.hpp"

namespace dlstage {

// File descriptors for a started program's stdin, stdout and stderr (-1:
// inherit ours), and whether it leaves our session (and terminal).
struct SpawnIo {
    int in = -1;
    int out = -1;
    int err = -1;
    bool new_session = false;
};

// Where program would be run from: itself if it names a path, else the
// first PATH entry (an empty one is the current directory; no PATH:
// /usr/local/bin:/usr/bin:/bin) that holds it executable.  "" if none.
std::string find_on_path(const std::string& program);

// /dev/null opened (close-on-exec) for a child's stdin or stdout.
Fd open_dev_null(int flags);

// Starts argv[0] with argv and returns its pid without waiting.  argv[0] is
// looked up in PATH unless it holds a '/'.  The program gets `env` if given,
// else our environment, and starts with no signals blocked.  Throws Error
// "cannot run ARGV0: REASON" if no process could be started or the program
// could not be executed.
pid_t spawn(const std::vector<std::string>& argv, const SpawnIo& io = {},
            const std::vector<std::string>* env = nullptr);

// Closes descriptors first..last (close_range, or one by one on a kernel
// without it).  Async-signal-safe: for a child between fork and exec too.
void close_descriptors(unsigned first, unsigned last);

// The rest of this process goes on in a child that is not its starter's:
// forks, the parent exits at once (status 0, reaped by whoever waits for
// it), the child returns.  For a helper a client starts and never waits
// for (no zombie of it stays with the client).  Throws Error when it
// cannot fork.
void continue_detached();

// Follows another process until it ends, from any process (a detached
// child of ours too): by a pidfd (pidfd_open, Linux 5.3) where the kernel
// gives one, else by its start time in /proc/PID/stat every 200 ms (a pid
// used again has another; a zombie has ended).  One gone already has ended.
class ProcessWatch {
public:
    explicit ProcessWatch(pid_t pid, bool use_pidfd = true);
    // Whether it has ended, waiting up to `wait` for it.
    bool ended_within(std::chrono::milliseconds wait) const;
    bool by_pidfd() const { return pidfd_.valid(); }

private:
    pid_t pid_;
    Fd pidfd_;
    std::optional<std::uint64_t> started_;  // without a pidfd: its start time
};

// Waits for pid (retrying on EINTR) and returns its wait status; throws
// Error naming `program` if it cannot.
int wait_for(pid_t pid, const std::string& program);

// Without blocking: pid's wait status if it has ended (it is then reaped),
// nullopt while it runs.  EINTR is retried; a pid that cannot be waited for
// (ECHILD: SIGCHLD ignored, the kernel reaped it) counts as ended with 0.
std::optional<int> try_wait(pid_t pid);

// try_wait until pid ends or grace has passed: its wait status, or nullopt
// (still running, e.g. stuck in an uninterruptible wait).
std::optional<int> wait_within(pid_t pid, std::chrono::milliseconds grace);

// Sends pid `signal`, waits up to grace for it to end, else kills it
// (SIGKILL) and waits for it.  Its wait status.
int stop(pid_t pid, int signal, std::chrono::milliseconds grace);

struct StderrRunOptions {
    bool discard_stdout = false;
    std::function<void(pid_t)> started;  // e.g. to forward signals to it
};

// Runs argv (as spawn), calls on_stderr_line for each line it writes to
// stderr, waits, and returns its wait status.
int run_reading_stderr(const std::vector<std::string>& argv,
                       const std::function<void(const std::string&)>& on_stderr_line,
                       const StderrRunOptions& options = {});

struct CapturedRun {
    int status = 0;      // as from waitpid
    std::string output;  // its stdout (unless a sink took it) and stderr, the tail only
};

using OutputSink = std::function<void(std::string_view)>;

// Runs args (as spawn) with stdin from /dev/null and its stdout and stderr
// captured, or stdout passed to on_stdout as it comes, and waits.  The
// program gets `env` if given, else our environment.
CapturedRun run_capturing(const std::vector<std::string>& args, const OutputSink& on_stdout = {},
                          const std::vector<std::string>* env = nullptr);

// How a process ended, from its wait status: "exited with status N" or
// "killed by signal N (NAME)".
std::string describe_exit(int wait_status);

// The process exited, with status 0.
bool exited_ok(int wait_status);

// The first and the last non-empty line of a program's output, trimmed and
// with control characters made spaces: safe for a one-line message.
std::string first_line(const std::string& output);
std::string last_line(const std::string& output);

// The one text for a program that failed: "PROGRAM exited with status N"
// or "PROGRAM killed by signal N (NAME)", then ": LINE", the last line of
// its output, where it wrote one.
std::string describe_failure(const std::string& program, int wait_status, const std::string& output);

// The exit code a shell reports for a wait status: the exit status, or
// 128 + the signal that killed it.
int shell_exit_code(int wait_status);

}  // namespace dlstage
