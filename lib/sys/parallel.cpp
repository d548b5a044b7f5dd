#include "lib/sys/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dlstage {

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

}  // namespace dlstage
