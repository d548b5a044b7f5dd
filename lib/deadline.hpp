// Time budgets for root's bounded steps: a deadline a number of seconds
// from now, and one shared fairly by steps taken in turn (each gets what is
// left over the steps still to come, so a slow first one cannot take every
// later one's time).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace dlstage {

class Deadline {
public:
    explicit Deadline(double seconds)
        : until_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(std::max(0.0, seconds))))
    {
    }

    // Seconds left, never below 0.
    double left() const
    {
        return std::max(0.0, std::chrono::duration<double>(until_ - std::chrono::steady_clock::now()).count());
    }

    // `share` seconds, or what is left, whichever is less.
    double within(double share) const { return std::max(0.0, std::min(share, left())); }

private:
    std::chrono::steady_clock::time_point until_;
};

class FairShares {
public:
    FairShares(double seconds, std::size_t parts) : deadline_(seconds), remaining_(parts) {}

    // Seconds left of them all.
    double left() const { return deadline_.left(); }

    // Steps still to come, before next().
    std::size_t remaining() const { return remaining_; }

    // The next step's share: what is left over the steps still to come, this
    // one included.
    double next()
    {
        const double share = deadline_.left() / static_cast<double>(std::max<std::size_t>(1, remaining_));
        if (remaining_ > 0)
            --remaining_;
        return share;
    }

private:
    Deadline deadline_;
    std::size_t remaining_;
};

}  // namespace dlstage
