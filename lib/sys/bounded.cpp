#include "lib/sys/bounded.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
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
// "3 s", "0.5 s": a bound under ten seconds keeps its tenths.
std::string bound_text(double seconds)
{
    if (seconds >= 10 || seconds == std::floor(seconds))
        return std::to_string(static_cast<long long>(seconds)) + " s";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", seconds);
    return text;
}

using Clock = std::chrono::steady_clock;

// The child keeps nothing of its parent's but its result pipe, which it
// returns (moved above the standard descriptors if it was one of them): a
// lock, a pipe or a directory the parent holds (a prolog's node cache lock,
// an outer bounded child's result pipe) must not stay held by a child stuck
// in the kernel where SIGKILL cannot end it (a FUSE request that is never
// answered).  Standard input, output and error become /dev/null: the
// parent's may be a pipe that its own caller reads until it closes.
int keep_only(int result_pipe)
{
    if (result_pipe <= 2) {
        const int moved = ::fcntl(result_pipe, F_DUPFD_CLOEXEC, 3);
        if (moved < 0)
            ::_exit(1);  // the parent sees no result: Failed
        result_pipe = moved;
    }
    const int null = ::open("/dev/null", O_RDWR);
    for (int std_fd = 0; std_fd <= 2; ++std_fd)
        if (null >= 0)
            (void)::dup2(null, std_fd);
        else
            (void)::close(std_fd);
    const auto kept = static_cast<unsigned>(result_pipe);
    close_descriptors(3, kept - 1);
    close_descriptors(kept + 1, ~0U);
    return result_pipe;
}

// Runs work and sends its message: 'R' and the result, or 'E' and the error.
[[noreturn]] void run_child(int out, const std::function<std::string()>& work)
{
    out = keep_only(out);
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
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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
        outcome.problem = "did not finish within " + bound_text(seconds);
        if (!wait_within(pid, kReapGrace))
            outcome.problem += " and could not be stopped (pid " + std::to_string(pid) + ")";
        return outcome;
    }
    const auto ended = wait_within(pid, kReapGrace);
    // A result counts only from a child that ended as run_child ends it: one
    // killed while writing may have sent part of its answer.
    const bool exited_cleanly = ended && WIFEXITED(*ended) && WEXITSTATUS(*ended) == 0;
    if (!text.empty() && text[0] == 'R' && exited_cleanly) {
        outcome.output = text.substr(1);
        return outcome;
    }
    outcome.status = BoundedOutcome::Status::Failed;
    if (!text.empty() && text[0] == 'E')
        outcome.problem = text.substr(1);
    else
        outcome.problem = ended ? how_it_ended(*ended) : "ended without a result";
    return outcome;
}

}  // namespace dlstage
