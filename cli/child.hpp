// Running a helper program from the command (the launcher for `stage`,
// mksquashfs for `pack`): no shell, its stderr read line by line as it
// comes, then its exit waited for.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage::cli {

// File descriptors for a started program's stdin, stdout and stderr (-1:
// inherit ours), and whether it leaves our session (and terminal).
struct SpawnIo {
    int in = -1;
    int out = -1;
    int err = -1;
    bool new_session = false;
};

// /dev/null opened for a child's stdin or stdout, closed when it goes out
// of scope (spawn has dup'ed it by then).
class DevNull {
public:
    explicit DevNull(int flags);
    ~DevNull();
    DevNull(const DevNull&) = delete;
    DevNull& operator=(const DevNull&) = delete;
    int fd() const { return fd_; }

private:
    int fd_;
};

// Starts argv[0] (found on PATH) with argv and returns its pid without
// waiting.  It starts with no signals blocked.  If it cannot be executed it
// writes "cannot run ARGV0: REASON" to its stderr and exits with 127.
pid_t spawn(const std::vector<std::string>& argv, const SpawnIo& io);

struct ChildOptions {
    bool discard_stdout = false;
    std::function<void(pid_t)> started;  // e.g. to forward signals to it
};

// Runs argv[0] (found on PATH) with argv, calls on_stderr_line for each line
// it writes to stderr, waits, and returns its wait status.  If it cannot be
// executed, its last stderr line is "cannot run ARGV0: REASON" and it exits
// with 127.  Throws Error when no process could be started.
int run_child(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_stderr_line,
              const ChildOptions& options = {});

}  // namespace dlstage::cli
