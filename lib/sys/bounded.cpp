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

// What the child writes: any number of parts, each 'P', its length in
// decimal and ':' before its bytes, then 'R' and the result or 'E' and the
// error, to the end.
constexpr char kPart = 'P';

// Runs work and sends its message: its parts as it sends them, then 'R'
// and the result, or 'E' and the error.
[[noreturn]] void run_child(int out, const std::function<std::string(const SendPart&)>& work)
{
    out = keep_only(out);
    const SendPart send = [out](const std::string& part) {
        if (!write_all(out, kPart + std::to_string(part.size()) + ":" + part))
            ::_exit(1);  // the parent stopped reading: nothing more to say
    };
    std::string message;
    int rc = 0;
    try {
        message = "R" + work(send);
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

// Splits the parts off the front of what the child wrote: whole ones go
// to `parts`, a part cut off (the child killed while writing it) is
// dropped; what follows the last whole part is returned.
std::string take_parts(const std::string& text, std::vector<std::string>& parts)
{
    std::size_t at = 0;
    while (at < text.size() && text[at] == kPart) {
        const std::size_t colon = text.find(':', at);
        if (colon == std::string::npos || colon == at + 1)
            return "";
        std::size_t length = 0;
        for (std::size_t i = at + 1; i < colon; ++i) {
            if (text[i] < '0' || text[i] > '9' || length > text.size())
                return "";
            length = length * 10 + static_cast<std::size_t>(text[i] - '0');
        }
        if (text.size() - colon - 1 < length)
            return "";
        parts.push_back(text.substr(colon + 1, length));
        at = colon + 1 + length;
    }
    return text.substr(at);
}
}  // namespace

BoundedOutcome run_bounded(double seconds, const std::function<std::string()>& work)
{
    return run_bounded_parts(seconds, [&work](const SendPart&) { return work(); });
}

BoundedOutcome run_bounded_parts(double seconds, const std::function<std::string(const SendPart& send)>& work)
{
    BoundedOutcome outcome;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        outcome.status = BoundedOutcome::Status::Failed;
        outcome.problem = cannot("create", "a pipe", errno);
        return outcome;
    }
    Fd in(fds[0]), out(fds[1]);
    // The whole call ends within `seconds`: the child is killed a reap's
    // time before, so that a caller holding a lock (a prolog's node cache
    // lock) keeps its own deadline.  A process stuck in an uninterruptible
    // wait cannot be reaped at all: it is left to init.
    const auto start = Clock::now();
    const auto bound = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    const auto reap = std::min<Clock::duration>(std::chrono::seconds(2), bound / 5);
    const auto remaining = [end = start + bound] {
        return std::max(std::chrono::milliseconds(1),
                        std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
    };
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
    if (!read_until(in.get(), start + bound - reap, text)) {
        ::kill(pid, SIGKILL);
        outcome.status = BoundedOutcome::Status::TimedOut;
        outcome.problem = "did not finish within " + bound_text(seconds);
        if (!wait_within(pid, remaining()))
            outcome.problem += " and could not be stopped (pid " + std::to_string(pid) + ")";
        else  // the parts it sent that are still in the pipe, to its end
            (void)read_until(in.get(), std::max(start + bound, Clock::now() + std::chrono::milliseconds(5)), text);
        take_parts(text, outcome.parts);
        return outcome;
    }
    text = take_parts(text, outcome.parts);
    const auto ended = wait_within(pid, remaining());
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
