#include "lib/sys/process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "lib/strings.hpp"
#include "lib/sys/read_lines.hpp"
#include "lib/sys/sys_error.hpp"

extern char** environ;

namespace dlstage {

namespace {

// PATH's entries, an empty one the current directory.
std::vector<std::string> path_dirs()
{
    const char* path = std::getenv("PATH");
    const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::vector<std::string> out;
    for (std::size_t start = 0;;) {
        const std::size_t end = dirs.find(':', start);
        const std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
        out.push_back(dir.empty() ? "." : dir);
        if (end == std::string::npos)
            return out;
        start = end + 1;
    }
}

// Where execvp would look for program: itself if it names a path, else each
// PATH entry.
std::vector<std::string> exec_candidates(const std::string& program)
{
    if (program.find('/') != std::string::npos)
        return {program};
    std::vector<std::string> candidates;
    for (const std::string& dir : path_dirs())
        candidates.push_back(dir + "/" + program);
    return candidates;
}

// A line of output made safe for a one-line message.
std::string printable_line(std::string line)
{
    for (char& c : line)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = ' ';
    return trim(line);
}

std::vector<char*> c_strings(const std::vector<std::string>& strings)
{
    std::vector<char*> out;
    for (const std::string& s : strings)
        out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// The child between fork and exec: async-signal-safe calls only.  Tries
// each candidate as execvp does and reports the telling errno (EACCES over
// a later ENOENT) through exec_error.
[[noreturn]] void exec_child(char* const* candidates, char* const* argv, char* const* envp, const SpawnIo& io,
                             int exec_error)
{
    // A caller waiting for signals with them blocked must not pass that on.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (io.new_session)
        setsid();
    int err = ENOENT;
    const int fds[] = {io.in, io.out, io.err};
    bool ready = true;
    for (int target = 0; ready && target < 3; ++target)
        if (fds[target] >= 0 && fds[target] != target && dup2(fds[target], target) < 0) {
            err = errno;
            ready = false;
        }
    for (char* const* c = candidates; ready && *c; ++c) {
        execve(*c, argv, envp);
        if (errno == EACCES || err != EACCES)
            err = errno;
    }
    (void)!::write(exec_error, &err, sizeof err);
    _exit(127);
}

// waitpid until pid ends, retrying on EINTR; false (errno set) if it cannot.
bool wait_blocking(pid_t pid, int& status)
{
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return false;
    return true;
}

// Keeps the end of what a program writes: enough for its last line.
void keep_tail(std::string& output, std::string_view more)
{
    constexpr std::size_t kKeep = 64 * 1024;
    output.append(more);
    if (output.size() > 2 * kKeep)
        output.erase(0, output.size() - kKeep);
}

// Reads each fd until its end, passing what comes to its sink; all at once,
// since a child blocked writing to one full pipe never closes the other.
void read_until_closed(const std::string& program, const std::vector<std::pair<int, OutputSink>>& streams)
{
    std::vector<pollfd> fds;
    for (const auto& stream : streams)
        fds.push_back({stream.first, POLLIN, 0});
    std::size_t open = fds.size();
    std::vector<char> buf(64 * 1024);
    while (open > 0) {
        if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR)
                continue;
            throw_cannot("read the output of", program, errno);
        }
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                fds[i].fd = -1;  // poll skips it from now on
                --open;
                continue;
            }
            streams[i].second(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        }
    }
}

}  // namespace

std::string find_on_path(const std::string& program)
{
    for (const std::string& candidate : exec_candidates(program))
        if (access(candidate.c_str(), X_OK) == 0)
            return candidate;
    return "";
}

Fd open_dev_null(int flags)
{
    Fd fd(::open("/dev/null", flags | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("open", "/dev/null", errno);
    return fd;
}

pid_t spawn(const std::vector<std::string>& argv, const SpawnIo& io, const std::vector<std::string>* env)
{
    const std::string& program = argv.at(0);
    const std::vector<std::string> candidates = exec_candidates(program);
    const std::vector<char*> candidate_ptrs = c_strings(candidates);
    const std::vector<char*> args = c_strings(argv);
    const std::vector<char*> envp = env ? c_strings(*env) : std::vector<char*>();
    int exec_error[2];
    if (pipe2(exec_error, O_CLOEXEC) != 0)
        throw_cannot("run", program, errno);
    Fd error_read(exec_error[0]), error_write(exec_error[1]);
    const pid_t pid = fork();
    if (pid < 0)
        throw_cannot("run", program, errno);
    if (pid == 0)
        exec_child(candidate_ptrs.data(), args.data(), env ? envp.data() : environ, io, error_write.get());
    error_write.reset();
    // A successful exec closes the pipe empty.
    int err = 0;
    ssize_t got;
    while ((got = ::read(error_read.get(), &err, sizeof err)) < 0 && errno == EINTR) {
    }
    if (got == static_cast<ssize_t>(sizeof err)) {
        int status = 0;
        (void)wait_blocking(pid, status);
        throw_cannot("run", program, err);
    }
    return pid;
}

void close_descriptors(unsigned first, unsigned last)
{
    if (first > last)
        return;
    if (::close_range(first, last, 0) == 0)
        return;
    const long open_max = ::sysconf(_SC_OPEN_MAX);
    const unsigned end = std::min<unsigned>(last, open_max > 0 ? static_cast<unsigned>(open_max) - 1 : 65535U);
    for (unsigned fd = first; fd <= end; ++fd)
        (void)::close(static_cast<int>(fd));
}

void continue_detached()
{
    const pid_t pid = fork();
    if (pid < 0)
        throw_cannot("fork", "a detached process", errno);
    if (pid > 0)
        _exit(0);
}

namespace {
// Field 22 of /proc/PID/stat (clock ticks after boot), or nothing when the
// process is gone or a zombie (state Z, field 3).  The name in field 2 may
// hold blanks and parentheses: the fields are counted after its last ')'.
std::optional<std::uint64_t> start_time_of(pid_t pid)
{
    if (pid <= 0)
        return std::nullopt;
    const Fd fd(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid())
        return std::nullopt;
    char buf[1024];
    ssize_t got;
    while ((got = ::read(fd.get(), buf, sizeof buf - 1)) < 0 && errno == EINTR) {
    }
    if (got <= 0)
        return std::nullopt;
    const std::string_view stat(buf, static_cast<std::size_t>(got));
    const auto name_end = stat.rfind(')');
    if (name_end == std::string_view::npos)
        return std::nullopt;
    const std::vector<std::string> fields = split(trim(stat.substr(name_end + 1)), ' ');
    if (fields.size() < 20 || fields[0] == "Z")
        return std::nullopt;
    char* end = nullptr;
    const unsigned long long ticks = std::strtoull(fields[19].c_str(), &end, 10);
    if (end == fields[19].c_str() || *end != '\0')
        return std::nullopt;
    return ticks;
}
}  // namespace

ProcessWatch::ProcessWatch(pid_t pid, bool use_pidfd)
    : pid_(pid), pidfd_(use_pidfd ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1)
{
    if (!pidfd_.valid())
        started_ = start_time_of(pid);
}

bool ProcessWatch::ended_within(std::chrono::milliseconds wait) const
{
    if (pidfd_.valid()) {
        struct pollfd p {};
        p.fd = pidfd_.get();
        p.events = POLLIN;
        int r;
        while ((r = ::poll(&p, 1, static_cast<int>(wait.count()))) < 0 && errno == EINTR) {
        }
        return r > 0;
    }
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
        if (!started_ || start_time_of(pid_) != started_)
            return true;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until)
            return false;
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(200), until - now));
    }
}

int wait_for(pid_t pid, const std::string& program)
{
    int status = 0;
    if (!wait_blocking(pid, status))
        throw_cannot("wait for", program, errno);
    return status;
}

std::optional<int> try_wait(pid_t pid)
{
    int status = 0;
    for (;;) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r == 0)
            return std::nullopt;
        if (errno != EINTR)
            return 0;
    }
}

std::optional<int> wait_within(pid_t pid, std::chrono::milliseconds grace)
{
    const auto until = std::chrono::steady_clock::now() + grace;
    for (;;) {
        if (const auto status = try_wait(pid))
            return status;
        if (std::chrono::steady_clock::now() >= until)
            return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

int stop(pid_t pid, int signal, std::chrono::milliseconds grace)
{
    kill(pid, signal);
    if (const auto status = wait_within(pid, grace))
        return *status;
    kill(pid, SIGKILL);
    int status = 0;
    return wait_blocking(pid, status) ? status : 0;
}

int run_reading_stderr(const std::vector<std::string>& argv,
                       const std::function<void(const std::string&)>& on_stderr_line, const StderrRunOptions& options)
{
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0)
        throw_cannot("run", argv.at(0), errno);
    Fd err_read(err_pipe[0]), err_write(err_pipe[1]);
    const Fd null = options.discard_stdout ? open_dev_null(O_WRONLY) : Fd();
    const pid_t pid = spawn(argv, SpawnIo{-1, null.get(), err_write.get(), false});
    if (options.started)
        options.started(pid);
    err_write.reset();
    for_each_line(err_read.get(), on_stderr_line);
    return wait_for(pid, argv[0]);
}

CapturedRun run_capturing(const std::vector<std::string>& args, const OutputSink& on_stdout,
                          const std::vector<std::string>* env)
{
    const std::string& program = args.front();
    int output[2];
    if (pipe2(output, O_CLOEXEC) != 0)
        throw_cannot("run", program, errno);
    Fd out_read(output[0]), out_write(output[1]);
    int listing[2] = {-1, -1};
    if (on_stdout && pipe2(listing, O_CLOEXEC) != 0)
        throw_cannot("run", program, errno);
    Fd stdout_read(listing[0]), stdout_write(listing[1]);
    const int child_stdout = on_stdout ? stdout_write.get() : out_write.get();
    const Fd null = open_dev_null(O_RDONLY);
    const pid_t pid = spawn(args, SpawnIo{null.get(), child_stdout, out_write.get(), false}, env);
    out_write.reset();
    stdout_write.reset();

    CapturedRun result;
    std::vector<std::pair<int, OutputSink>> streams = {
        {out_read.get(), [&](std::string_view more) { keep_tail(result.output, more); }}};
    if (on_stdout)
        streams.emplace_back(stdout_read.get(), on_stdout);
    read_until_closed(program, streams);
    result.status = wait_for(pid, program);
    return result;
}

std::string describe_exit(int wait_status)
{
    if (WIFSIGNALED(wait_status)) {
        const int sig = WTERMSIG(wait_status);
        return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

bool exited_ok(int wait_status)
{
    return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string first_line(const std::string& output)
{
    const std::size_t start = output.find_first_not_of(" \t\r\n");
    if (start == std::string::npos)
        return "";
    return printable_line(output.substr(start, output.find('\n', start) - start));
}

std::string last_line(const std::string& output)
{
    const std::size_t end = output.find_last_not_of(" \t\r\n");
    if (end == std::string::npos)
        return "";
    const std::size_t newline = output.rfind('\n', end);
    const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
    return printable_line(output.substr(start, end + 1 - start));
}

std::string describe_failure(const std::string& program, int wait_status, const std::string& output)
{
    const std::string line = last_line(output);
    return program + " " + describe_exit(wait_status) + (line.empty() ? "" : ": " + line);
}

int shell_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    return 128 + (WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0);
}

}  // namespace dlstage
