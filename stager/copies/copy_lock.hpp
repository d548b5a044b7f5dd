// The lock on one dataset's copy in a shared tier: a file in the user's
// tier directory, on the shared file system, so that jobs on any nodes see
// it.  Created with O_EXCL (atomic on NFS 3+ and Lustre, unlike flock,
// which Lustre may keep node-local); it names its holder (job, host, pid),
// and the holder touches it every few seconds.  A waiter breaks it only
// when policies/shared_copy.hpp says it is stale: the holder's job ended,
// its process is gone (known on its own host), or it fell silent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "lib/sys/fd.hpp"

namespace dlstage::stager {

struct LockHolder {
    std::string job, host;
    long pid = 0;
    std::int64_t since = 0;

    std::string text() const;  // the file's content
};

// Parses a lock file's content; nothing when it is not whole (a holder
// that is writing it right now, or a file that is not a lock).
std::optional<LockHolder> parse_lock(const std::string& text);

// Slurm's view of a job: running (or about to), ended, or nothing when
// Slurm did not answer (squeue missing, controller down).
using JobRunning = std::function<std::optional<bool>(const std::string& job)>;
std::optional<bool> job_running_by_squeue(const std::string& job);

struct LockOptions {
    double poll_s = 2;        // between looks at a held lock
    double heartbeat_s = 10;  // the holder touches the file this often
    std::int64_t silence_limit_s = 300;
    JobRunning job_running = job_running_by_squeue;
    // Lines for the job output: who is waited for, locks broken.
    std::function<void(const std::string&)> say;
};

class CopyLock {
public:
    // Takes the lock `name` in the directory open as dir_fd, waiting as
    // long as a live holder has it.  shown: its path, for messages.
    // Throws Error when the lock cannot be created at all.
    CopyLock(int dir_fd, std::string name, std::string shown, LockHolder me, LockOptions options);
    ~CopyLock();
    CopyLock(const CopyLock&) = delete;
    CopyLock& operator=(const CopyLock&) = delete;

    // Removes the lock if it is still this holder's.  Idempotent.
    void release();

    // One attempt, for a job that needs a lock on each of its nodes at once
    // (a node cache: stager/tiers/cache_tier) and must hold all or none, lest two
    // jobs on the same nodes each hold one and wait for the other: the
    // lock, or nothing when a live holder has it (after waiting poll_s
    // once) or a stale one was only just broken.
    static std::unique_ptr<CopyLock> try_take(int dir_fd, std::string name, std::string shown, LockHolder me,
                                              LockOptions options);

private:
    struct OneAttempt {};
    CopyLock(OneAttempt, int dir_fd, std::string name, std::string shown, LockHolder me, LockOptions options);
    bool try_create();
    void wait_or_break();
    void beat();

    int dir_fd_;
    std::string name_, shown_;
    LockHolder me_;
    LockOptions options_;
    Fd fd_;
    std::thread heart_;
    std::mutex mutex_;
    std::condition_variable stop_;
    bool stopping_ = false;
    std::int64_t last_said_ = 0;
};

}  // namespace dlstage::stager
