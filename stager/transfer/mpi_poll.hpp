// What a thread that polls MPI and must not wait uses (the exchange's MPI
// thread, the shared tier's walked copy, the watchdog): whether a request
// is done, and how long to sleep when nothing happened.
#pragma once

#include <algorithm>
#include <chrono>
#include <mpi.h>
#include <thread>

namespace dlstage::stager {

// Whether a nonblocking operation is done (one never posted is).
inline bool request_done(MPI_Request& request)
{
    int done = 1;
    if (request != MPI_REQUEST_NULL)
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
}

// Nothing to do: sleep, longer the longer nothing happens (20 us doubling
// to 1 ms), so that an idle rank polls MPI (a poll(2) of its sockets each
// time) a few thousand times a second rather than tens of thousands; the
// other threads, and ranks sharing the node's cores, get the CPU.  The
// kernel's socket buffers keep bytes moving while it sleeps.
class IdleBackoff {
public:
    // After a round of polling: busy starts the sleeps over, else sleeps.
    void after(bool busy)
    {
        if (busy) {
            idle_ = kFirst;
            return;
        }
        std::this_thread::sleep_for(idle_);
        idle_ = std::min(idle_ * 2, kMost);
    }

private:
    static constexpr std::chrono::microseconds kFirst{20}, kMost{1000};
    std::chrono::microseconds idle_ = kFirst;
};

}  // namespace dlstage::stager
