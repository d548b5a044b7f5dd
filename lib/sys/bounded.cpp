#include "lib/sys/bounded.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/write_all.hpp"

namespace dlstage {

namespace {
using Clock = std::chrono::steady_clock;

// Runs work and sends its message: 'R' and the result, or 'E' and the error.
[[noreturn]] void run_child(int out, const std::function<std::string()>& work)
{
    std::string message;
    int rc = 0;
    try {
        message = "R" + work();
    } catch (const std::exception& e) {
        message = std::string("E") + e.what();
        rc = 1;
    } catch (...) {
        message = "Eunexpected failure";
        rc = 1;
    }
    (void)write_all(out, message);
    ::_exit(rc);
}

std::string how_it_ended(int status)
{
    return describe_exit(status) + (WIFEXITED(status) ? " without a result" : "");
}

// Reads the child's message until EOF or the deadline; false on timeout.
bool read_until(int fd, Clock::time_point deadline, std::string& text)
{
    char buf[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0)
            return false;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (ready < 0 && errno != EINTR)
            return true;  // treat as end: the message is what arrived
        if (ready <= 0)
            continue;
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return true;
        text.append(buf, static_cast<std::size_t>(n));
    }
}
}  // namespace

BoundedOutcome run_bounded(double seconds, const std::function<std::string()>& work)
{
    BoundedOutcome outcome;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        outcome.status = BoundedOutcome::Status::Failed;
        outcome.problem = cannot("create", "a pipe", errno);
        return outcome;
    }
    Fd in(fds[0]), out(fds[1]);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    const pid_t pid = ::fork();
    if (pid < 0) {
        outcome.status = BoundedOutcome::Status::Failed;
        outcome.problem = cannot("fork", "", errno);
        return outcome;
    }
    if (pid == 0) {
        in.reset();
        run_child(out.get(), work);
    }
    out.reset();
    std::string text;
    // A process stuck in an uninterruptible wait cannot be reaped: it is left to init.
    constexpr auto kReapGrace = std::chrono::seconds(5);
    if (!read_until(in.get(), deadline, text)) {
        ::kill(pid, SIGKILL);
        outcome.status = BoundedOutcome::Status::TimedOut;
        outcome.problem = "did not finish within " + std::to_string(static_cast<long long>(seconds)) + " s";
        if (!wait_within(pid, kReapGrace))
            outcome.problem += " and could not be stopped (pid " + std::to_string(pid) + ")";
        return outcome;
    }
    const auto ended = wait_within(pid, kReapGrace);
    if (!text.empty() && text[0] == 'R') {
        outcome.output = text.substr(1);
        return outcome;
    }
    outcome.status = BoundedOutcome::Status::Failed;
    if (!text.empty())
        outcome.problem = text.substr(1);
    else
        outcome.problem = ended ? how_it_ended(*ended) : "ended without a result";
    return outcome;
}

}  // namespace dlstage
