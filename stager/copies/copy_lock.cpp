#include "stager/copies/copy_lock.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/write_all.hpp"
#include "policies/shared_copy.hpp"

namespace dlstage::stager {

std::string LockHolder::text() const
{
    return "job " + job + "\nhost " + host + "\npid " + std::to_string(pid) + "\nsince " + std::to_string(since) + "\n";
}

std::optional<LockHolder> parse_lock(const std::string& text)
{
    LockHolder h;
    int seen = 0;
    std::istringstream in(text);
    std::string key, value;
    while (in >> key >> value) {
        try {
            if (key == "job")
                h.job = value, seen |= 1;
            else if (key == "host")
                h.host = value, seen |= 2;
            else if (key == "pid")
                h.pid = std::stol(value), seen |= 4;
            else if (key == "since")
                h.since = std::stoll(value), seen |= 8;
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    if (seen != 15)
        return std::nullopt;
    return h;
}

std::optional<bool> job_running_by_squeue(const std::string& job)
{
    const std::string squeue = find_on_path("squeue");
    if (squeue.empty())
        return std::nullopt;
    const CapturedRun run = run_capturing({squeue, "-h", "-j", job, "-o", "%T"});
    const std::string state = trim(run.output);
    // squeue forgets a job some minutes after it ends: "Invalid job id".
    if (state.find("Invalid job id") != std::string::npos)
        return false;
    if (!exited_ok(run.status))
        return std::nullopt;
    if (state.empty())
        return false;
    for (const char* live : {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STAGE_OUT", "RESIZING", "SIGNALING"})
        if (state == live)
            return true;
    return false;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, PENDING again
}

namespace {
std::int64_t now_s()
{
    return static_cast<std::int64_t>(std::time(nullptr));
}

struct Seen {
    std::string text;
    std::int64_t mtime = 0;
    long uid = -1;
};

// The lock's content and when it was last touched; nothing if it is gone.
std::optional<Seen> look_at(int dir_fd, const std::string& name, const std::string& shown)
{
    const std::optional<SmallFile> file = read_small_file_at(dir_fd, name, shown, 4096);
    if (!file)
        return std::nullopt;
    return Seen{file->content, static_cast<std::int64_t>(file->st.st_mtim.tv_sec), static_cast<long>(file->st.st_uid)};
}
}  // namespace

CopyLock::CopyLock(int dir_fd, std::string name, std::string shown, LockHolder me, LockOptions options)
    : dir_fd_(dir_fd), name_(std::move(name)), shown_(std::move(shown)), me_(std::move(me)),
      options_(std::move(options))
{
    while (!try_create())
        wait_or_break();
    heart_ = std::thread([this] { beat(); });
}

CopyLock::CopyLock(OneAttempt, int dir_fd, std::string name, std::string shown, LockHolder me, LockOptions options)
    : dir_fd_(dir_fd), name_(std::move(name)), shown_(std::move(shown)), me_(std::move(me)),
      options_(std::move(options))
{
}

std::unique_ptr<CopyLock> CopyLock::try_take(int dir_fd, std::string name, std::string shown, LockHolder me,
                                             LockOptions options)
{
    std::unique_ptr<CopyLock> lock(
        new CopyLock(OneAttempt{}, dir_fd, std::move(name), std::move(shown), std::move(me), std::move(options)));
    if (!lock->try_create()) {
        lock->wait_or_break();
        if (!lock->try_create())
            return nullptr;
    }
    lock->heart_ = std::thread([raw = lock.get()] { raw->beat(); });
    return lock;
}

CopyLock::~CopyLock()
{
    release();
}

bool CopyLock::try_create()
{
    Fd fd(::openat(dir_fd_, name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) {
        if (errno == EEXIST)
            return false;
        throw_cannot("create the lock", shown_, errno);
    }
    me_.since = now_s();
    if (!write_all(fd.get(), me_.text()) || ::fsync(fd.get()) != 0)
        throw_cannot("write the lock", shown_, errno);
    fd_ = std::move(fd);
    return true;
}

void CopyLock::wait_or_break()
{
    std::optional<Seen> seen;
    try {
        seen = look_at(dir_fd_, name_, shown_);
    } catch (const Error& e) {
        // No job writes anything but a regular file here: a fifo, a symlink
        // or a directory (someone else's, planted while the directory was
        // open to them) holds nothing, and must not fail every later job.
        const std::string aside = name_ + ".broken-" + me_.job + "-" + std::to_string(::getpid());
        if (::renameat(dir_fd_, name_.c_str(), dir_fd_, aside.c_str()) != 0) {
            if (errno == ENOENT)
                return;
            throw_cannot("move away", shown_ + " (" + e.what() + ")", errno);
        }
        if (::unlinkat(dir_fd_, aside.c_str(), 0) != 0)
            ::unlinkat(dir_fd_, aside.c_str(), AT_REMOVEDIR);  // an empty directory; a full one stays aside
        if (options_.say)
            options_.say("broke the lock " + shown_ + ": it is not a lock (" + e.what() + ")");
        return;
    }
    if (!seen)
        return;  // released meanwhile: try again at once
    const std::optional<LockHolder> holder = parse_lock(seen->text);
    policy::LockFacts facts;
    facts.my_job = me_.job;
    facts.my_host = me_.host;
    facts.silent_s = now_s() - seen->mtime;
    facts.silence_limit_s = options_.silence_limit_s;
    facts.file_uid = seen->uid;
    facts.my_uid = static_cast<long>(::geteuid());
    if (holder) {
        facts.holder_job = holder->job;
        facts.holder_host = holder->host;
        facts.holder_pid = holder->pid;
        if (holder->host == me_.host)
            facts.holder_alive = ::kill(static_cast<pid_t>(holder->pid), 0) == 0 || errno == EPERM;
        facts.job_running = options_.job_running(holder->job);
    } else if (facts.silent_s < 10) {
        facts.job_running = true;  // being written right now, most likely
    } else {
        facts.holder_host = "an unknown host";
    }
    const policy::Verdict verdict = policy::lock_is_stale(facts);
    if (!verdict.allowed) {
        if (options_.say && now_s() - last_said_ >= 60) {
            options_.say("waiting: " + verdict.reason);
            last_said_ = now_s();
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_s));
        return;
    }
    // Broken by renaming it away: of two waiters that both judged it
    // stale, one rename finds it.  The one that took a lock made anew
    // meanwhile (its content differs) puts it back.
    const std::string aside = name_ + ".stale-" + me_.job + "-" + std::to_string(::getpid());
    if (::renameat(dir_fd_, name_.c_str(), dir_fd_, aside.c_str()) != 0) {
        if (errno == ENOENT)
            return;
        throw_cannot("break the stale lock", shown_, errno);
    }
    const std::optional<Seen> taken = look_at(dir_fd_, aside, shown_);
    if (taken && taken->text != seen->text) {
        // Best effort: if it fails, the other holder's heartbeat finds its
        // lock gone and it stages as if it had been broken.
        if (::linkat(dir_fd_, aside.c_str(), dir_fd_, name_.c_str(), 0) != 0) {
        }
    } else if (options_.say) {
        options_.say("broke the lock " + shown_ + ": " + verdict.reason);
    }
    ::unlinkat(dir_fd_, aside.c_str(), 0);
}

void CopyLock::beat()
{
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_.wait_for(lock, std::chrono::duration<double>(options_.heartbeat_s), [this] { return stopping_; }))
        ::futimens(fd_.get(), nullptr);  // best effort: a missed beat only makes waiters patient
}

void CopyLock::release()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!fd_.valid())
            return;
        stopping_ = true;
    }
    stop_.notify_all();
    if (heart_.joinable())
        heart_.join();
    // Only if it is still ours: a waiter may have judged it stale.
    try {
        const std::optional<Seen> seen = look_at(dir_fd_, name_, shown_);
        if (seen && seen->text == me_.text())
            ::unlinkat(dir_fd_, name_.c_str(), 0);
    } catch (const Error&) {
    }
    fd_.reset();
}

}  // namespace dlstage::stager
