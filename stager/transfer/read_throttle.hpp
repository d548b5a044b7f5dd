// Keeps this rank's reads of the source under its byte rate
// (DLSTAGE_RATE_LIMIT: a courtesy to a shared file system; also how tests
// make a transfer last long enough to interrupt).  A read reserves its share
// of time, then waits until then to start.  One throttle per process, for
// the whole staging: a tree staged in segments (stager/steps/segment_transfer)
// runs a transfer per segment, and each must not start the rate afresh
// with a burst of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace dlstage::stager {

class Throttle {
public:
    using TimePoint = std::chrono::steady_clock::time_point;
    explicit Throttle(double rate) : rate_(rate), start_(std::chrono::steady_clock::now()) {}
    // When a read of `bytes` may start (now or earlier when there is no limit).
    TimePoint reserve(std::uint64_t bytes);
    void account(std::uint64_t bytes);  // reserves, and waits until then

private:
    double rate_;
    TimePoint start_;
    std::mutex mutex_;
    std::uint64_t total_ = 0;
};

// This process's throttle at `rate` (bytes/s; 0: no limit), started at the
// first call with that rate.  Called before the transfer's threads start.
Throttle& read_throttle(std::uint64_t rate);

}  // namespace dlstage::stager
