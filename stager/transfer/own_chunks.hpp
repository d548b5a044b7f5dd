// The transfer to a shared tier: every rank reads the chunks it owns
// (chunk c: rank c % N, as in the ring) and writes them itself into the one
// tree on the shared file system.  Each byte is read once and written
// once; nothing crosses the interconnect, so nothing needs a checksum.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "stager/transfer/source_reader.hpp"
#include "stager/transfer/transfer_types.hpp"

namespace dlstage::stager {

// The parts of a chunk in order, each at most `most` bytes (a piece longer
// than that is cut): the unit a rank reads and writes.  The chunk stays the
// unit of who owns what (the layout all ranks share).
std::vector<Chunk> split_chunk(const Chunk& chunk, std::uint64_t most);

// Copies the chunks this rank owns of each part it is given, as they come:
// one pool of threads (as many as the ring's readers and writers), each
// reading a chunk and writing it, so that one part's last chunks and the
// next part's first move at once (a tree walked while it moves to a shared
// tier: stager/steps/segment_transfer).  Chunks are numbered over all the
// parts in the order given, from 0: chunk number n is rank n % N's.
// progress: (chunks written, bytes written) by this rank, from a worker
// thread now and then.  changes: as exchange_chunks' (stager/transfer/exchange.hpp).
class OwnChunkCopier {
public:
    OwnChunkCopier(int rank, int ranks, const ExchangeOptions& options, ProgressFn progress = {},
                   ProvingReads* changes = nullptr);
    ~OwnChunkCopier();  // abandon()
    OwnChunkCopier(const OwnChunkCopier&) = delete;
    OwnChunkCopier& operator=(const OwnChunkCopier&) = delete;

    // The part's own chunks are queued; its plan, writer and chunks must live
    // until part_done says so (or the copier is gone).  Returns its id
    // (0, 1, ... in the order given).
    std::size_t add(const ExchangePart& given);
    // Every chunk of part `id` this rank owns is written.
    bool part_done(std::size_t id) const;
    // What a worker threw, rethrown (the others stop taking chunks).
    void rethrow_failure() const;
    // No more parts: waits for the queued ones, then rethrows a failure.
    void finish();
    // The chunks not started are dropped; returns once the threads stopped.
    void abandon();

    std::uint64_t bytes_read() const { return bytes_.load(); }

private:
    struct Part : ExchangePart {
        std::size_t own = 0;                  // its chunks this rank owns
        std::atomic<std::size_t> written{0};  // of those
    };
    struct Work {
        Part* part;
        std::size_t part_id;
        std::size_t chunk;
    };
    void work();
    bool take(Work& work);
    void copy(const Work& work, std::unique_ptr<SourceReader>& reader, std::size_t& reading, std::vector<char>& buffer);
    void report(std::size_t done_now);
    void stop();

    const int rank_, ranks_;
    const ExchangeOptions& options_;
    const unsigned streams_;  // threads, each reading and writing
    const ProgressFn progress_;
    ProvingReads* const changes_;
    std::size_t next_number_ = 0;  // the first chunk of the next part, over all parts

    mutable std::mutex mutex_;
    std::condition_variable work_ready_;
    std::deque<std::unique_ptr<Part>> parts_;  // given, kept while the copier lives (few: segments)
    std::deque<Work> queue_;
    bool closed_ = false;
    std::exception_ptr failure_;
    std::atomic<bool> failed_{false};

    std::atomic<std::size_t> done_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::mutex report_;
    std::chrono::steady_clock::time_point last_report_;
    std::vector<std::thread> threads_;
};

// The chunks this rank owns of one plan, copied (an OwnChunkCopier given
// one part); returns when every one is written.
ExchangeResult copy_own_chunks(const std::vector<Chunk>& chunks, const Plan& plan, TreeWriter& writer, int rank,
                               int ranks, const ExchangeOptions& options, const ProgressFn& progress,
                               ProvingReads* changes = nullptr);

}  // namespace dlstage::stager
