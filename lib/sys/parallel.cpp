#include "lib/sys/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <sched.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace dlstage {

unsigned usable_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return static_cast<unsigned>(CPU_COUNT(&set));
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<unsigned>(online) : 1;
}

bool slow_by_median(bool slow_now, float* took, std::size_t count, double slow_us)
{
    if (count == 0)
        return slow_now;
    float* middle = took + count / 2;
    std::nth_element(took, middle, took + count);
    return slow_now ? *middle >= slow_us / 2 : *middle > slow_us;
}

void run_on_threads(unsigned threads, const std::function<void()>& work)
{
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::max(1u, threads); ++t)
        pool.emplace_back(work);
    for (std::thread& t : pool)
        t.join();
}

void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn)
{
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::exception_ptr first_error;
    run_on_threads(static_cast<unsigned>(std::min<std::size_t>(threads, count)), [&] {
        for (std::size_t i; (i = next++) < count;) {
            try {
                fn(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(mutex);
                if (!first_error)
                    first_error = std::current_exception();
                next = count;  // hand out no more
            }
        }
    });
    if (first_error)
        std::rethrow_exception(first_error);
}

void for_share_in_blocks(std::size_t total, int rank, int ranks, unsigned threads,
                         const std::function<void(std::size_t from, std::size_t to, std::size_t step)>& fn)
{
    // Blocks of kBlock indexes: a thread takes the next block and adds what
    // it found to the result once (one lock per block, not per entry: at
    // 1.28 M entries and 16 threads, a lock per stat was a queue).
    constexpr std::size_t kBlock = 512;
    const std::size_t step = static_cast<std::size_t>(std::max(1, ranks));
    const std::size_t first = static_cast<std::size_t>(std::max(0, rank));
    const std::size_t count = first < total ? (total - first + step - 1) / step : 0;
    for_each_index((count + kBlock - 1) / kBlock, std::max(1u, threads), [&](std::size_t block) {
        const std::size_t end = std::min(count, (block + 1) * kBlock);
        fn(first + block * kBlock * step, first + end * step, step);
    });
}

ThreadPool::ThreadPool(unsigned threads)
{
    for (unsigned t = 1; t < threads; ++t)
        helpers_.emplace_back([this] { serve(); });
}

ThreadPool::~ThreadPool()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_)
        t.join();
}

void ThreadPool::take_indexes()
{
    for (std::size_t i; (i = next_++) < count_;) {
        try {
            (*fn_)(i);
        } catch (...) {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (!error_)
                error_ = std::current_exception();
            next_ = count_;  // hand out no more
        }
    }
}

// Every helper takes part in every round, even one with nothing left for
// it: the round ends when all have, so none still reads this round's fn_
// when the caller hands out the next.
void ThreadPool::serve()
{
    std::uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || round_ != seen; });
            if (stopping_)
                return;
            seen = round_;
        }
        take_indexes();
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            ++helpers_done_;
        }
        finished_.notify_one();
    }
}

void ThreadPool::for_each_index(std::size_t count, const std::function<void(std::size_t)>& fn)
{
    if (helpers_.empty() || count <= 1) {
        for (std::size_t i = 0; i < count; ++i)
            fn(i);
        return;
    }
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        fn_ = &fn;
        count_ = count;
        next_ = 0;
        helpers_done_ = 0;
        error_ = nullptr;
        ++round_;
    }
    wake_.notify_all();
    take_indexes();
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        finished_.wait(lock, [&] { return helpers_done_ == helpers_.size(); });
        error = error_;
    }
    if (error)
        std::rethrow_exception(error);
}

}  // namespace dlstage
