#include "cli/child.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/read_lines.hpp"
#include "lib/error.hpp"

namespace dlstage::cli {

DevNull::DevNull(int flags) : fd_(open("/dev/null", flags | O_CLOEXEC))
{
    if (fd_ < 0)
        throw Error(std::string("cannot open /dev/null: ") + std::strerror(errno));
}

DevNull::~DevNull()
{
    ::close(fd_);
}

pid_t spawn(const std::vector<std::string>& argv, const SpawnIo& io)
{
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0)
        throw Error("cannot run " + argv[0] + ": " + std::strerror(errno));
    if (pid == 0) {
        // A caller waiting for signals with them blocked must not pass that on.
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        if (io.new_session)
            setsid();
        const int fds[] = {io.in, io.out, io.err};
        for (int target = 0; target < 3; ++target)
            if (fds[target] >= 0 && fds[target] != target)
                dup2(fds[target], target);
        execvp(args[0], args.data());
        const std::string why = "cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
        (void)!write(STDERR_FILENO, why.data(), why.size());
        _exit(127);
    }
    return pid;
}

int run_child(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_stderr_line,
              const ChildOptions& options)
{
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0)
        throw Error("cannot run " + argv[0] + ": " + std::strerror(errno));
    pid_t pid = -1;
    try {
        const std::optional<DevNull> null = options.discard_stdout ? std::optional<DevNull>(O_WRONLY) : std::nullopt;
        pid = spawn(argv, SpawnIo{-1, null ? null->fd() : -1, err_pipe[1], false});
    } catch (const Error&) {
        ::close(err_pipe[0]);
        ::close(err_pipe[1]);
        throw;
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
