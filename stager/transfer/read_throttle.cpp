#include "stager/transfer/read_throttle.hpp"

#include <memory>
#include <thread>

namespace dlstage::stager {

Throttle::TimePoint Throttle::reserve(std::uint64_t bytes)
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (rate_ <= 0)
        return start_;
    const auto due = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(static_cast<double>(total_) / rate_));
    total_ += bytes;
    return due;
}

void Throttle::account(std::uint64_t bytes)
{
    std::this_thread::sleep_until(reserve(bytes));
}

Throttle& read_throttle(std::uint64_t rate)
{
    // One rate per process (the stager's tuning); another one starts afresh.
    static std::unique_ptr<Throttle> throttle;
    static std::uint64_t its_rate = 0;
    if (!throttle || its_rate != rate) {
        throttle = std::make_unique<Throttle>(static_cast<double>(rate));
        its_rate = rate;
    }
    return *throttle;
}

}  // namespace dlstage::stager
