#include "stager/transfer/exchange.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mpi.h>
#include <mutex>
#include <thread>
#include <xxhash.h>

#include "lib/error.hpp"
#include "stager/transfer/io_activity.hpp"
#include "stager/transfer/mpi_poll.hpp"
#include "stager/transfer/read_throttle.hpp"
#include "stager/transfer/source_reader.hpp"

namespace dlstage::stager {

namespace {
constexpr std::size_t kHashBytes = sizeof(XXH64_hash_t);
constexpr int kTagSpace = 32768;  // MPI guarantees tags up to 32767

// A part of the exchange, as the MPI thread follows it.
struct Part {
    ExchangePart what;
    std::size_t id = 0;        // the feed's parts counted: addresses are reused
    std::size_t posted = 0;    // chunks given a slot
    std::size_t finished = 0;  // chunks written and their slots free again
    std::size_t size() const { return what.chunks->size(); }
};

// One buffer of the window and what is happening to it.
struct Slot {
    Part* part = nullptr;    // whose chunk (its counts: the MPI thread only)
    std::size_t index = 0;   // the chunk, within its part
    std::size_t number = 0;  // the chunk, counted over the whole exchange
    std::vector<char> data;
    MPI_Request recv = MPI_REQUEST_NULL;
    MPI_Request send = MPI_REQUEST_NULL;
    std::atomic<bool> read_done{false};   // own chunk: a reader filled it
    std::atomic<bool> write_done{false};  // a writer stored it
    bool handled = false;                 // arrived, forwarded, queued for writing

    const Chunk& chunk() const { return (*part->what.chunks)[index]; }
    std::size_t bytes() const { return static_cast<std::size_t>(chunk().bytes); }
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
// the stager): a node cache's or a split staging's ring may follow another
// dataset's, and a fresh window (64 MiB zeroed, faulted in, then unmapped)
// cost 0.4 s each time, more than a hundred small files take to move.
std::vector<std::vector<char>>& spare_buffers()
{
    static std::vector<std::vector<char>> spare;
    return spare;
}

class Ring {
public:
    Ring(PartFeed& feed, const ExchangeOptions& options, MPI_Comm comm, ProvingReads* changes)
        : feed_(feed), options_(options), comm_(comm), changes_(changes),
          throttle_(read_throttle(options.read_rate_limit))
    {
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        left_ = (rank_ + size_ - 1) % size_;
        right_ = (rank_ + 1) % size_;
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
        if (errors_.failed())
            abandon_slots();
        errors_.rethrow();
        for (auto& slot : slots_)
            spare_buffers().push_back(std::move(slot->data));
        return {bytes_read_.load()};
    }

private:
    int owner(std::size_t number) const { return static_cast<int>(number % static_cast<std::size_t>(size_)); }
    int tag(std::size_t number) const { return static_cast<int>(number % kTagSpace); }
    // What of a chunk travels the ring: its bytes and their hash.
    static int on_wire(const Slot& slot) { return static_cast<int>(slot.bytes() + kHashBytes); }

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
    }

    // After a failure: requests may still be open on the buffers (the
    // process is about to exit and the launcher stops the other ranks; do
    // not wait on them), and any thread that calls MPI meanwhile (the
    // watchdog's) lets a late chunk land in its buffer.  They are kept to
    // the process's end.
    void abandon_slots()
    {
        static auto* kept = new std::vector<std::unique_ptr<Slot>>;
        for (auto& slot : slots_)
            kept->push_back(std::move(slot));
        slots_.clear();
    }

    // Each reader keeps its own file handles: separate streams, as a
    // parallel file system counts them.  It opens a chunk's files several
    // at once (options_.opens over all readers).
    void read_loop()
    {
        std::unique_ptr<SourceReader> reader;
        std::size_t reading_part = SIZE_MAX;  // the id of the part it reads
        Throttle::TimePoint due;
        // Time slots of the rate limit go out in chunk order: the ring hands
        // chunks on in order, so the first must not wait behind later ones.
        const auto reserve = [&](Slot* slot) { due = throttle_.reserve(slot->chunk().bytes); };
        while (Slot* slot = to_read_.pop(reserve)) {
            if (errors_.failed())
                continue;
            try {
                const Plan& plan = *slot->part->what.plan;
                if (!reader)
                    reader = std::make_unique<SourceReader>(plan, opens_per_reader(options_), changes_);
                else if (slot->part->id != reading_part)
                    reader->use_plan(plan);
                reading_part = slot->part->id;
                std::this_thread::sleep_until(due);
                {
                    const IoScope reading(stage_io(), Io::Reading);
                    reader->read(slot->chunk(), slot->data.data());
                }
                const XXH64_hash_t hash = XXH3_64bits(slot->data.data(), slot->bytes());
                std::memcpy(slot->data.data() + slot->bytes(), &hash, kHashBytes);
                bytes_read_ += slot->bytes();
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
                const std::size_t n = slot->bytes();
                if (owner(slot->number) != rank_) {
                    XXH64_hash_t sent = 0;
                    std::memcpy(&sent, slot->data.data() + n, kHashBytes);
                    if (XXH3_64bits(slot->data.data(), n) != sent)
                        throw Error("chunk " + std::to_string(slot->number) + " arrived corrupted (checksum mismatch)");
                }
                {
                    const IoScope writing(stage_io(), Io::Writing);
                    slot->part->what.writer->write(slot->chunk(), slot->data.data());
                }
                chunks_written_ += 1;
                bytes_written_ += n;
                slot->write_done = true;
            } catch (...) {
                errors_.set(std::current_exception());
            }
        }
    }

    // A buffer for the next chunk: a free one, or a new one while the
    // window has room (buffers of the last exchange first: spare_buffers).
    Slot* free_slot()
    {
        if (!free_.empty()) {
            Slot* slot = free_.back();
            free_.pop_back();
            return slot;
        }
        if (slots_.size() >= std::max(2u, options_.window))
            return nullptr;
        slots_.push_back(std::make_unique<Slot>());
        if (!spare_buffers().empty()) {
            slots_.back()->data = std::move(spare_buffers().back());
            spare_buffers().pop_back();
        }
        return slots_.back().get();
    }

    // The part whose chunks come next, taking the feed's next part when
    // this one's are all under way; null when none is there (yet).
    Part* part_to_post()
    {
        while (!posting_ || posting_->posted == posting_->size()) {
            if (feed_ended_)
                return nullptr;
            ExchangePart next;
            const PartFeed::Poll got = feed_.poll(next);
            if (got == PartFeed::Poll::NotYet)
                return nullptr;
            if (got == PartFeed::Poll::End) {
                feed_ended_ = true;
                return nullptr;
            }
            parts_.push_back({next, parts_given_++});
            posting_ = &parts_.back();
        }
        return posting_;
    }

    // Start the next chunks while buffers are free: a receive from the left
    // neighbour, or a read for a chunk this rank owns.
    bool post_ahead()
    {
        bool posted = false;
        while (!free_.empty() || slots_.size() < std::max(2u, options_.window)) {
            Part* part = part_to_post();
            if (!part)
                break;
            Slot* slot = free_slot();
            slot->part = part;
            slot->index = part->posted++;
            slot->number = next_post_++;
            // No larger than the largest chunk so far: a tree of small files
            // moves in chunks smaller than the chunk size.
            if (slot->data.size() < static_cast<std::size_t>(on_wire(*slot)))
                slot->data.resize(static_cast<std::size_t>(on_wire(*slot)));
            slot->read_done = false;
            slot->write_done = false;
            slot->handled = false;
            if (owner(slot->number) == rank_)
                to_read_.push(slot);
            else
                MPI_Irecv(slot->data.data(), on_wire(*slot), MPI_BYTE, left_, tag(slot->number), comm_, &slot->recv);
            in_flight_.push_back(slot);
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
            if (slot->number != next_handle_)
                break;  // strictly in order: the right neighbour receives in order
            const bool here = owner(slot->number) == rank_ ? slot->read_done.load() : request_done(slot->recv);
            if (!here)
                break;
            if (owner(slot->number) != right_)
                MPI_Isend(slot->data.data(), on_wire(*slot), MPI_BYTE, right_, tag(slot->number), comm_, &slot->send);
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
            if (!request_done(slot->send))
                break;
            in_flight_.pop_front();
            ++slot->part->finished;
            free_.push_back(slot);
            progressed = true;
        }
        return progressed;
    }

    // A part whose every chunk is written (and every part before it) is
    // done: the feed may finish it and let it go.
    bool finish_parts()
    {
        bool progressed = false;
        while (!parts_.empty() && parts_.front().finished == parts_.front().size()) {
            if (&parts_.front() == posting_)
                posting_ = nullptr;
            feed_.done(parts_.front().what);
            parts_.pop_front();
            progressed = true;
        }
        return progressed;
    }

    void drive(const ProgressFn& progress)
    {
        auto last_report = std::chrono::steady_clock::now();
        IdleBackoff idle;
        for (;;) {
            if (errors_.failed())
                return;
            const bool busy = post_ahead() | handle_arrivals() | reclaim() | finish_parts() | feed_.advance();
            if (feed_ended_ && parts_.empty())
                break;
            const auto now = std::chrono::steady_clock::now();
            if (now - last_report > std::chrono::milliseconds(200)) {
                progress(chunks_written_.load(), bytes_written_.load());
                last_report = now;
            }
            idle.after(busy);
        }
        progress(chunks_written_.load(), bytes_written_.load());
    }

    PartFeed& feed_;
    const ExchangeOptions& options_;
    MPI_Comm comm_;
    ProvingReads* changes_;
    Throttle& throttle_;
    int rank_ = 0, size_ = 1, left_ = 0, right_ = 0;

    std::deque<Part> parts_;   // MPI thread only: those not done, in order
    Part* posting_ = nullptr;  // of parts_: whose chunks are being posted
    bool feed_ended_ = false;
    std::size_t parts_given_ = 0;
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

// One part, given at once: the exchange of a whole plan.
class OnePart : public PartFeed {
public:
    explicit OnePart(ExchangePart part) : part_(part) {}
    Poll poll(ExchangePart& part) override
    {
        if (given_)
            return Poll::End;
        given_ = true;
        part = part_;
        return Poll::Part;
    }
    void done(const ExchangePart&) override {}

private:
    ExchangePart part_;
    bool given_ = false;
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
    OnePart feed({&plan, &writer, &chunks});
    return Ring(feed, options, comm, changes).run(progress);
}

ExchangeResult exchange_parts(PartFeed& feed, const ExchangeOptions& options, const ProgressFn& progress, MPI_Comm comm,
                              ProvingReads* changes)
{
    if (options.scheme != ExchangeScheme::Bcast)
        return Ring(feed, options, comm, changes).run(progress);
    // The baseline moves one part after the other.
    ExchangeResult all;
    for (;;) {
        ExchangePart part;
        const PartFeed::Poll got = feed.poll(part);
        if (got == PartFeed::Poll::End)
            return all;
        if (got == PartFeed::Poll::NotYet) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        all.bytes_read +=
            broadcast_one_at_a_time(*part.plan, *part.chunks, *part.writer, options, progress, comm, changes)
                .bytes_read;
        feed.done(part);
    }
}

}  // namespace dlstage::stager
