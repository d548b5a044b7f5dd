#include "stager/transfer/exchange.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mpi.h>
#include <mutex>
#include <thread>
#include <xxhash.h>

#include "lib/error.hpp"
#include "stager/transfer/io_activity.hpp"
#include "stager/transfer/read_throttle.hpp"
#include "stager/transfer/source_reader.hpp"

namespace dlstage::stager {

namespace {
constexpr std::size_t kHashBytes = sizeof(XXH64_hash_t);
constexpr int kTagSpace = 32768;  // MPI guarantees tags up to 32767

// Whether a nonblocking send or receive is done (one never posted is).
bool completed(MPI_Request& request)
{
    int done = 1;
    if (request != MPI_REQUEST_NULL)
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done != 0;
}

// One buffer of the window and what is happening to it.
struct Slot {
    std::size_t chunk = 0;
    std::vector<char> data;
    MPI_Request recv = MPI_REQUEST_NULL;
    MPI_Request send = MPI_REQUEST_NULL;
    std::atomic<bool> read_done{false};   // own chunk: a reader filled it
    std::atomic<bool> write_done{false};  // a writer stored it
    bool handled = false;                 // arrived, forwarded, queued for writing
};

// A queue of slots for worker threads, closed at the end.
class SlotQueue {
public:
    void push(Slot* slot)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            items_.push_back(slot);
        }
        ready_.notify_one();
    }
    // nullptr once closed and empty.  on_pop runs under the queue's lock, so
    // what it hands out (a time slot of the rate limit) goes in queue order.
    Slot* pop(const std::function<void(Slot*)>& on_pop = {})
    {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
        if (items_.empty())
            return nullptr;
        Slot* slot = items_.front();
        items_.pop_front();
        if (on_pop)
            on_pop(slot);
        return slot;
    }
    void close()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closed_ = true;
        }
        ready_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Slot*> items_;
    bool closed_ = false;
};

// The first failure of any thread, rethrown on the MPI thread.
class FirstError {
public:
    void set(std::exception_ptr e)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_)
            error_ = e;
        failed_ = true;
    }
    bool failed() const { return failed_; }
    void rethrow()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_)
            std::rethrow_exception(error_);
    }

private:
    std::mutex mutex_;
    std::exception_ptr error_;
    std::atomic<bool> failed_{false};
};

// Chunk buffers kept from one exchange to the next (one runs at a time in
// the stager): a tree staged in segments (stager/steps/segment_transfer) runs an
// exchange per segment, and a fresh window (64 MiB zeroed, faulted in,
// then unmapped) cost 0.4 s each time, more than a segment of a hundred
// small files takes to move.
std::vector<std::vector<char>>& spare_buffers()
{
    static std::vector<std::vector<char>> spare;
    return spare;
}

class Ring {
public:
    Ring(const Plan& plan, const std::vector<Chunk>& chunks, TreeWriter& writer, const ExchangeOptions& options,
         MPI_Comm comm, ProvingReads* changes)
        : plan_(plan), chunks_(chunks), writer_(writer), options_(options), comm_(comm), changes_(changes),
          throttle_(read_throttle(options.read_rate_limit))
    {
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        left_ = (rank_ + size_ - 1) % size_;
        right_ = (rank_ + 1) % size_;
        // No more buffers than chunks, none larger than the largest chunk,
        // and those of the last exchange first (spare_buffers).
        std::uint64_t largest = 0;
        for (const Chunk& chunk : chunks_)
            largest = std::max(largest, chunk.bytes);
        slots_.resize(std::max<std::size_t>(2, std::min<std::size_t>(options.window, chunks_.size())));
        for (auto& slot : slots_) {
            slot = std::make_unique<Slot>();
            if (!spare_buffers().empty()) {
                slot->data = std::move(spare_buffers().back());
                spare_buffers().pop_back();
            }
            slot->data.resize(static_cast<std::size_t>(largest) + kHashBytes);
            free_.push_back(slot.get());
        }
    }

    ExchangeResult run(const ProgressFn& progress)
    {
        start_workers();
        try {
            drive(progress);
        } catch (...) {
            errors_.set(std::current_exception());
        }
        stop_workers();
        errors_.rethrow();
        for (auto& slot : slots_)
            spare_buffers().push_back(std::move(slot->data));
        return {bytes_read_.load()};
    }

private:
    int owner(std::size_t c) const { return static_cast<int>(c % static_cast<std::size_t>(size_)); }
    int tag(std::size_t c) const { return static_cast<int>(c % kTagSpace); }
    std::size_t bytes(std::size_t c) const { return static_cast<std::size_t>(chunks_[c].bytes); }
    // What of a chunk travels the ring: its bytes and their hash.
    int on_wire(std::size_t c) const { return static_cast<int>(bytes(c) + kHashBytes); }

    void start_workers()
    {
        for (unsigned i = 0; i < std::max(1u, options_.readers); ++i)
            threads_.emplace_back([this] { read_loop(); });
        for (unsigned i = 0; i < std::max(1u, options_.writers); ++i)
            threads_.emplace_back([this] { write_loop(); });
    }

    void stop_workers()
    {
        to_read_.close();
        to_write_.close();
        for (auto& t : threads_)
            t.join();
        // Requests still open after a failure: the process is about to exit
        // and the launcher stops the other ranks; do not wait on them.
    }

    // Each reader keeps its own file handles: separate streams, as a
    // parallel file system counts them.  It opens a chunk's files several
    // at once (options_.opens over all readers).
    void read_loop()
    {
        SourceReader reader(plan_, opens_per_reader(options_), changes_);
        Throttle::TimePoint due;
        // Time slots of the rate limit go out in chunk order: the ring hands
        // chunks on in order, so the first must not wait behind later ones.
        const auto reserve = [&](Slot* slot) { due = throttle_.reserve(chunks_[slot->chunk].bytes); };
        while (Slot* slot = to_read_.pop(reserve)) {
            if (errors_.failed())
                continue;
            try {
                const Chunk& chunk = chunks_[slot->chunk];
                std::this_thread::sleep_until(due);
                {
                    const IoScope reading(stage_io(), Io::Reading);
                    reader.read(chunk, slot->data.data());
                }
                const XXH64_hash_t hash = XXH3_64bits(slot->data.data(), bytes(slot->chunk));
                std::memcpy(slot->data.data() + bytes(slot->chunk), &hash, kHashBytes);
                bytes_read_ += chunk.bytes;
                slot->read_done = true;
            } catch (...) {
                errors_.set(std::current_exception());
            }
        }
    }

    void write_loop()
    {
        while (Slot* slot = to_write_.pop()) {
            if (errors_.failed())
                continue;
            try {
                const std::size_t n = bytes(slot->chunk);
                if (owner(slot->chunk) != rank_) {
                    XXH64_hash_t sent = 0;
                    std::memcpy(&sent, slot->data.data() + n, kHashBytes);
                    if (XXH3_64bits(slot->data.data(), n) != sent)
                        throw Error("chunk " + std::to_string(slot->chunk) + " arrived corrupted (checksum mismatch)");
                }
                {
                    const IoScope writing(stage_io(), Io::Writing);
                    writer_.write(chunks_[slot->chunk], slot->data.data());
                }
                chunks_written_ += 1;
                bytes_written_ += n;
                slot->write_done = true;
            } catch (...) {
                errors_.set(std::current_exception());
            }
        }
    }

    // Start the next chunks while buffers are free: a receive from the left
    // neighbour, or a read for a chunk this rank owns.
    bool post_ahead()
    {
        bool posted = false;
        while (next_post_ < chunks_.size() && !free_.empty()) {
            Slot* slot = free_.back();
            free_.pop_back();
            slot->chunk = next_post_;
            slot->read_done = false;
            slot->write_done = false;
            slot->handled = false;
            if (owner(next_post_) == rank_)
                to_read_.push(slot);
            else
                MPI_Irecv(slot->data.data(), on_wire(next_post_), MPI_BYTE, left_, tag(next_post_), comm_, &slot->recv);
            in_flight_.push_back(slot);
            ++next_post_;
            posted = true;
        }
        return posted;
    }

    // The chunks in order: once one is here, pass it on and queue its write.
    bool handle_arrivals()
    {
        bool progressed = false;
        for (Slot* slot : in_flight_) {
            if (slot->handled)
                continue;
            if (slot->chunk != next_handle_)
                break;  // strictly in order: the right neighbour receives in order
            const bool here = owner(slot->chunk) == rank_ ? slot->read_done.load() : completed(slot->recv);
            if (!here)
                break;
            if (owner(slot->chunk) != right_)
                MPI_Isend(slot->data.data(), on_wire(slot->chunk), MPI_BYTE, right_, tag(slot->chunk), comm_,
                          &slot->send);
            slot->handled = true;
            to_write_.push(slot);
            ++next_handle_;
            progressed = true;
        }
        return progressed;
    }

    // A buffer is free again once it was forwarded and written.
    bool reclaim()
    {
        bool progressed = false;
        while (!in_flight_.empty()) {
            Slot* slot = in_flight_.front();
            if (!slot->handled || !slot->write_done.load())
                break;
            if (!completed(slot->send))
                break;
            in_flight_.pop_front();
            free_.push_back(slot);
            progressed = true;
        }
        return progressed;
    }

    void drive(const ProgressFn& progress)
    {
        auto last_report = std::chrono::steady_clock::now();
        // Nothing to do: sleep, longer the longer nothing happens, so that
        // an idle rank polls MPI (a poll(2) of its sockets each time) a few
        // thousand times a second rather than tens of thousands; the other
        // threads, and ranks sharing the node's cores, get the CPU.  The
        // kernel's socket buffers keep bytes moving while we sleep.
        constexpr std::chrono::microseconds kFirstIdle{20}, kMostIdle{1000};
        std::chrono::microseconds idle = kFirstIdle;
        while (!(next_handle_ == chunks_.size() && in_flight_.empty())) {
            if (errors_.failed())
                return;
            const bool busy = post_ahead() | handle_arrivals() | reclaim();
            const auto now = std::chrono::steady_clock::now();
            if (now - last_report > std::chrono::milliseconds(200)) {
                progress(chunks_written_.load(), bytes_written_.load());
                last_report = now;
            }
            if (busy) {
                idle = kFirstIdle;
            } else {
                std::this_thread::sleep_for(idle);
                idle = std::min(idle * 2, kMostIdle);
            }
        }
        progress(chunks_written_.load(), bytes_written_.load());
    }

    const Plan& plan_;
    const std::vector<Chunk>& chunks_;
    TreeWriter& writer_;
    const ExchangeOptions& options_;
    MPI_Comm comm_;
    ProvingReads* changes_;
    Throttle& throttle_;
    int rank_ = 0, size_ = 1, left_ = 0, right_ = 0;

    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<Slot*> free_;      // MPI thread only
    std::deque<Slot*> in_flight_;  // MPI thread only, in chunk order
    std::size_t next_post_ = 0;
    std::size_t next_handle_ = 0;

    SlotQueue to_read_, to_write_;
    std::vector<std::thread> threads_;
    FirstError errors_;
    std::atomic<std::uint64_t> bytes_read_{0};
    std::atomic<std::size_t> chunks_written_{0};
    std::atomic<std::uint64_t> bytes_written_{0};
};
ExchangeResult broadcast_one_at_a_time(const Plan& plan, const std::vector<Chunk>& chunks, TreeWriter& writer,
                                       const ExchangeOptions& options, const ProgressFn& progress, MPI_Comm comm,
                                       ProvingReads* changes)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    SourceReader reader(plan, options.opens, changes);  // the one reader
    Throttle& throttle = read_throttle(options.read_rate_limit);
    std::vector<char> buffer(options.chunk_size + kHashBytes);
    std::uint64_t bytes_done = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        const std::size_t n = static_cast<std::size_t>(chunks[c].bytes);
        const int owner = static_cast<int>(c % static_cast<std::size_t>(size));
        if (rank == owner) {
            {
                const IoScope reading(stage_io(), Io::Reading);
                reader.read(chunks[c], buffer.data());
            }
            const XXH64_hash_t hash = XXH3_64bits(buffer.data(), n);
            std::memcpy(buffer.data() + n, &hash, kHashBytes);
            throttle.account(n);
        }
        MPI_Bcast(buffer.data(), static_cast<int>(n + kHashBytes), MPI_BYTE, owner, comm);
        XXH64_hash_t sent = 0;
        std::memcpy(&sent, buffer.data() + n, kHashBytes);
        if (rank != owner && XXH3_64bits(buffer.data(), n) != sent)
            throw Error("chunk " + std::to_string(c) + " arrived corrupted (checksum mismatch)");
        {
            const IoScope writing(stage_io(), Io::Writing);
            writer.write(chunks[c], buffer.data());
        }
        bytes_done += n;
        progress(c + 1, bytes_done);
    }
    return {reader.bytes_read()};
}
}  // namespace

ExchangeResult exchange_chunks(const Plan& plan, const std::vector<Chunk>& chunks, TreeWriter& writer,
                               const ExchangeOptions& options, const ProgressFn& progress, MPI_Comm comm,
                               ProvingReads* changes)
{
    if (options.scheme == ExchangeScheme::Bcast)
        return broadcast_one_at_a_time(plan, chunks, writer, options, progress, comm, changes);
    Ring ring(plan, chunks, writer, options, comm, changes);
    return ring.run(progress);
}

}  // namespace dlstage::stager
