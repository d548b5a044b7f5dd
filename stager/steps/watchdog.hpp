// The stager's watchdog: no staging waits for ever on a node that stopped
// answering (its rank stopped or killed, the node frozen or cut off), as
// PyTorch's process groups, Horovod and ULFM each learned to bound theirs.
// Every rank sends a small heartbeat over a communicator of its own from a
// thread of its own (MPI_THREAD_MULTIPLE), each period: the ranks to rank
// 0 and rank 0 to every rank, and each rank to its two neighbours in the
// exchange's ring (stager/transfer/exchange), over the links the chunks
// take, so a link cut between two nodes that both still reach rank 0 is
// seen too.  A rank that has heard nothing from a peer it listens to for
// `bound` seconds calls `on_stall` with one line naming the silent nodes
// (or itself, when it hears none of its peers: it is the one cut off);
// the caller ends the staging there (the launcher's --kill-on-bad-exit
// then stops every rank, the stalled one too).  A rank busy with its own
// work (a walk, an extraction) keeps sending: only a node that cannot is
// named.
#pragma once

#include <atomic>
#include <functional>
#include <mpi.h>
#include <string>
#include <thread>
#include <vector>

#include "lib/sys/periodic.hpp"

namespace dlstage::stager {

class Watchdog {
public:
    // Collective over MPI_COMM_WORLD (the ranks' node names are gathered
    // first).  `nodes`: every rank's node name, in rank order.  Starts
    // nothing when bound is 0 or MPI gives less than MPI_THREAD_MULTIPLE.
    Watchdog(std::vector<std::string> nodes, double bound, std::function<void(const std::string&)> on_stall);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    // Whether it watches (a bound, more than one rank, MPI_THREAD_MULTIPLE).
    bool running() const { return thread_.joinable(); }

    // Collective: once every rank is done (a barrier on MPI_COMM_WORLD, the
    // heartbeats going on while ranks arrive; the barrier even when it does
    // not watch), the thread stops and its communicator is freed.  Before
    // MPI_Finalize.
    void stop();

    // The ranks a rank hears from (and beats to): rank 0's every rank, the
    // others rank 0 and their ring neighbours.
    static std::vector<int> peers_of(int rank, int size);

    // The one line said when the peers listed went silent, e.g. "no word
    // from n3 (rank 2) for 300 s: its stager stopped, or the node froze or
    // was cut off; staging stopped"; `self` ("n2 (rank 1)") when every
    // peer of more than one went silent at once: this node is the one cut off.
    static std::string stall_line(const std::vector<std::string>& silent, double bound, const std::string& self = "");

private:
    void run();

    std::vector<std::string> nodes_;
    double bound_;
    std::function<void(const std::string&)> on_stall_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

// A wait for every rank that the watchdog cannot watch, because it uses
// MPI itself: MPI_Init's and the name gathering's before it starts,
// MPI_Finalize's after it stops.  A rank stopped or cut off in one of
// those moments held the others there for ever (the soak caught one at
// MPI_Finalize).  A plain thread, no MPI: once `bound` seconds pass with
// the wait not over (this object not gone), `on_stall` gets the line, e.g.
// "the stagers' end (MPI_Finalize) waited 300 s for the other nodes
// (site.stall_timeout): ...",
// and ends the rank there, as for a stall.  Nothing when bound is 0.
class UnwatchedWait {
public:
    UnwatchedWait(const std::string& wait, double bound, std::function<void(const std::string&)> on_stall);

    static std::string stall_line(const std::string& wait, double bound);

private:
    Periodic timer_;
};

}  // namespace dlstage::stager
