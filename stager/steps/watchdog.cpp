#include "stager/steps/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <unistd.h>

#include "lib/strings.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/transfer/mpi_poll.hpp"

namespace dlstage::stager {

namespace {
using Clock = std::chrono::steady_clock;

constexpr int kBeatTag = 1;

// How often each rank sends: often enough that a late heartbeat never
// looks like silence, seldom enough to cost nothing (a byte a period).
double period_for(double bound)
{
    return std::clamp(bound / 10, 0.1, 5.0);
}

}  // namespace

Watchdog::Watchdog(std::vector<std::string> nodes, double bound, std::function<void(const std::string&)> on_stall)
    : nodes_(std::move(nodes)), bound_(bound), on_stall_(std::move(on_stall))
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    // The same on every rank (one configuration, one MPI library), so that
    // they all take part in the dup below or none does.
    if (bound_ <= 0 || provided < MPI_THREAD_MULTIPLE || nodes_.size() < 2)
        return;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog()
{
    if (thread_.joinable()) {
        stopping_ = true;
        thread_.join();
    }
}

void Watchdog::stop()
{
    // Every rank ends here together, watched or not: srun ends a rank that
    // outlives the first to end by the bound (launch/job_step).
    if (nodes_.size() > 1)
        quiet_barrier(MPI_COMM_WORLD);  // heartbeats go on while the last ranks finish
    if (!thread_.joinable())
        return;
    stopping_ = true;
    thread_.join();
    MPI_Comm_free(&comm_);
}

std::vector<int> Watchdog::peers_of(int rank, int size)
{
    std::vector<int> peers;
    for (int peer = 0; peer < size; ++peer) {
        const bool ring_neighbour = peer == (rank + 1) % size || peer == (rank + size - 1) % size;
        if (peer != rank && (rank == 0 || peer == 0 || ring_neighbour))
            peers.push_back(peer);
    }
    return peers;
}

std::string Watchdog::stall_line(const std::vector<std::string>& silent, double bound, const std::string& self)
{
    const std::string seconds = std::to_string(static_cast<long long>(bound));
    if (!self.empty())
        return "no word from any of " + join(silent, ", ") + " for " + seconds + " s (site.stall_timeout): " + self +
               " was cut off from the others; staging stopped on every node";
    return "no word from " + join(silent, ", ") + " for " + seconds +
           " s (site.stall_timeout): its stager stopped, or the node froze or was cut off; staging stopped on "
           "every node";
}

UnwatchedWait::UnwatchedWait(const std::string& wait, double bound, std::function<void(const std::string&)> on_stall)
    : timer_(std::chrono::duration<double>(bound),
             bound > 0 ? std::function<void()>(
                             [line = stall_line(wait, bound), on_stall = std::move(on_stall)] { on_stall(line); })
                       : std::function<void()>())
{
}

std::string UnwatchedWait::stall_line(const std::string& wait, double bound)
{
    return wait + " waited " + std::to_string(static_cast<long long>(bound)) +
           " s for the other nodes (site.stall_timeout): a stager stopped, or a node froze or was cut off; staging "
           "stopped on every node";
}

void Watchdog::run()
{
    const int size = static_cast<int>(nodes_.size());
    const std::vector<int> peers = peers_of(rank_, size);
    const auto named = [&](int rank) {  // "n2 (rank 1)"
        return nodes_[static_cast<std::size_t>(rank)] + " (rank " + std::to_string(rank) + ")";
    };
    const auto start = Clock::now();
    std::vector<Clock::time_point> heard(static_cast<std::size_t>(size), start);
    std::vector<MPI_Request> sends(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
    std::vector<MPI_Request> receives(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
    std::vector<char> arrived(static_cast<std::size_t>(size), 0);
    char beat = 1;
    const auto listen = [&](int peer) {
        MPI_Irecv(&arrived[static_cast<std::size_t>(peer)], 1, MPI_CHAR, peer, kBeatTag, comm_,
                  &receives[static_cast<std::size_t>(peer)]);
    };
    for (const int peer : peers)
        listen(peer);
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_for(bound_)));
    const auto bound = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bound_));
    auto next_beat = start;
    while (!stopping_) {
        const auto now = Clock::now();
        std::vector<std::string> silent;
        for (const int peer : peers) {
            const auto at = static_cast<std::size_t>(peer);
            // One heartbeat in flight to each peer at most: a peer that
            // stopped reading costs no growing queue.
            if (now >= next_beat && request_done(sends[at]))
                MPI_Isend(&beat, 1, MPI_CHAR, peer, kBeatTag, comm_, &sends[at]);
            while (request_done(receives[at])) {
                heard[at] = now;
                listen(peer);
            }
        }
        // Once one peer is silent past the bound, every peer silent for half
        // of it is named too: a node cut off hears none of its peers, each
        // silence crossing the bound a heartbeat apart from the next.
        const bool stalled = std::any_of(peers.begin(), peers.end(),
                                         [&](int peer) { return now - heard[static_cast<std::size_t>(peer)] > bound; });
        for (const int peer : peers)
            if (stalled && now - heard[static_cast<std::size_t>(peer)] > bound / 2)
                silent.push_back(named(peer));
        if (now >= next_beat)
            next_beat = now + period;
        if (!silent.empty()) {
            const bool cut_off = silent.size() == peers.size() && peers.size() > 1;
            on_stall_(stall_line(silent, bound_, cut_off ? named(rank_) : ""));
            return;
        }
        usleep(20000);
    }
    for (const int peer : peers) {
        const auto at = static_cast<std::size_t>(peer);
        if (receives[at] != MPI_REQUEST_NULL) {
            MPI_Cancel(&receives[at]);
            MPI_Wait(&receives[at], MPI_STATUS_IGNORE);
        }
        if (sends[at] != MPI_REQUEST_NULL)
            MPI_Wait(&sends[at], MPI_STATUS_IGNORE);  // a byte: sent eagerly, done at once
    }
}

}  // namespace dlstage::stager
