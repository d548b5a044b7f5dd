// Work spread over a few threads: how the dataset walk, the extraction of
// several tar shards, the manifest scan and the source reader's opens keep
// many files in flight.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dlstage {

// The CPUs this process may run on: inside a Slurm job, the job's share of
// the node, not the whole node.
unsigned usable_cpus();

// Whether operations timed one by one (microseconds; `took` is reordered)
// are slow enough to overlap on several threads: over slow_us each is a
// round trip to a server (a parallel file system, a cold disk), where on a
// local or cached file system it takes microseconds, less than handing it
// to another thread.  Judged by the median: a thread preempted on a busy
// node makes one operation look slow, not the group.  Fast again only
// below half of slow_us, so that the caller does not swing on every group;
// with nothing timed, as it was (slow_now).  The source reader's opens and
// the walk's stats.
bool slow_by_median(bool slow_now, float* took, std::size_t count, double slow_us);

// Runs work() on `threads` threads (at least one) and waits for all of them.
void run_on_threads(unsigned threads, const std::function<void()>& work);

// fn(i) for every i below count, on up to `threads` threads, each taking the
// next index.  The first exception stops the handing out of indexes and is
// rethrown once every thread has stopped.
void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn);

// This share of [0, total): indexes i with i % ranks == rank, handed out in
// blocks to `threads` threads; fn(from, to, step) once per block, for the
// indexes from, from + step, ... below to.
void for_share_in_blocks(std::size_t total, int rank, int ranks, unsigned threads,
                         const std::function<void(std::size_t from, std::size_t to, std::size_t step)>& fn);

// The same on threads that stay: for work handed out many times over in
// small rounds (a reader's opens, a few files at a time), where starting
// and ending threads each round would cost more than the work (thread
// stacks mapped and unmapped, TLB shootdowns on every core).  Not for
// concurrent use: one caller hands out one round at a time, and takes part.
class ThreadPool {
public:
    explicit ThreadPool(unsigned threads);  // threads in all, the caller's included
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool();

    void for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn);

private:
    void serve();
    void take_indexes();

    std::mutex mutex_;
    std::condition_variable wake_, finished_;
    std::vector<std::thread> helpers_;
    const std::function<void(std::size_t)>* fn_ = nullptr;
    std::size_t count_ = 0;
    std::atomic<std::size_t> next_{0};
    std::uint64_t round_ = 0;
    std::size_t helpers_done_ = 0;  // of this round
    bool stopping_ = false;
    std::exception_ptr error_;
};

}  // namespace dlstage
