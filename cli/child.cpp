#include "cli/child.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/read_lines.hpp"
#include "lib/error.hpp"

namespace dlstage::cli {

int run_child(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_stderr_line,
              const ChildOptions& options)
{
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0)
        throw Error("cannot run " + argv[0] + ": " + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        ::close(err_pipe[0]);
        ::close(err_pipe[1]);
        throw Error("cannot run " + argv[0] + ": " + std::strerror(err));
    }
    if (pid == 0) {
        if (options.discard_stdout) {
            const int null = open("/dev/null", O_WRONLY);
            if (null >= 0)
                dup2(null, STDOUT_FILENO);
        }
        dup2(err_pipe[1], STDERR_FILENO);
        execvp(args[0], args.data());
        const std::string why = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
        (void)!write(STDERR_FILENO, why.data(), why.size());
        _exit(127);
    }
    if (options.started)
        options.started(pid);
    ::close(err_pipe[1]);
    for_each_line(err_pipe[0], on_stderr_line);
    ::close(err_pipe[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            throw Error("cannot wait for " + argv[0] + ": " + std::strerror(errno));
    return status;
}

}  // namespace dlstage::cli
