// Running a helper program from the command (the launcher for `stage`,
// mksquashfs for `pack`): no shell, its stderr read line by line as it
// comes, then its exit waited for.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dlstage::cli {

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
