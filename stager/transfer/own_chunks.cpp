#include "stager/transfer/own_chunks.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "stager/transfer/io_activity.hpp"
#include "stager/transfer/read_throttle.hpp"
#include "stager/transfer/source_reader.hpp"

namespace dlstage::stager {

namespace {
// Reads and writes of at most 1 MiB: a FUSE or parallel file system client
// serves a larger read as several requests of its max_read (1 MiB for
// pfssim and Lustre's default RPC size), and a 4 MiB buffer per thread
// brought no speed, only memory and CPU (bench/shared: the 1 GiB file with
// N = 4 took 4.4-5.5 s and 1.6-2.9 CPU s with 4 MiB reads and writes,
// 3.9-4.7 s and 0.5-1.1 CPU s with 1 MiB, on a loaded 2-core machine).
constexpr std::uint64_t kIoBytes = 1u << 20;
}  // namespace

std::vector<Chunk> split_chunk(const Chunk& chunk, std::uint64_t most)
{
    most = std::max<std::uint64_t>(1, most);
    std::vector<Chunk> parts(1);
    for (const Piece& piece : chunk.pieces) {
        std::uint64_t done = 0;
        while (done < piece.length) {
            if (parts.back().bytes == most)
                parts.emplace_back();
            Chunk& part = parts.back();
            const std::uint64_t take = std::min(piece.length - done, most - part.bytes);
            Piece cut;
            cut.entry = piece.entry;
            cut.offset = piece.offset + done;
            cut.length = static_cast<std::uint32_t>(take);  // at most a piece's length
            part.pieces.push_back(cut);
            part.bytes += take;
            done += take;
        }
    }
    if (parts.back().pieces.empty())
        parts.pop_back();
    return parts;
}

OwnChunkCopier::OwnChunkCopier(int rank, int ranks, const ExchangeOptions& options, ProgressFn progress,
                               ProvingReads* changes)
    : rank_(rank), ranks_(std::max(1, ranks)), options_(options),
      // Readers and writers are the same threads here: each reads a chunk
      // and writes it, as many streams as the ring's readers and writers.
      streams_(std::max(1u, options.readers + options.writers)), progress_(std::move(progress)), changes_(changes),
      last_report_(std::chrono::steady_clock::now())
{
    try {
        for (unsigned t = 0; t < streams_; ++t)
            threads_.emplace_back([this] { work(); });
    } catch (...) {
        stop();  // a thread not started: those that did are joined, not left running
        throw;
    }
}

OwnChunkCopier::~OwnChunkCopier()
{
    abandon();
}

void OwnChunkCopier::abandon()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        queue_.clear();
    }
    stop();
}

void OwnChunkCopier::stop()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : threads_)
        if (t.joinable())
            t.join();
}

std::size_t OwnChunkCopier::add(const ExchangePart& given)
{
    auto part = std::make_unique<Part>();
    static_cast<ExchangePart&>(*part) = given;
    const std::vector<Chunk>& chunks = *given.chunks;
    const auto rank = static_cast<std::size_t>(rank_), ranks = static_cast<std::size_t>(ranks_);
    const std::size_t first = (rank + ranks - next_number_ % ranks) % ranks;  // this rank's first chunk in the part
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t id = parts_.size();
    for (std::size_t c = first; c < chunks.size(); c += ranks)
        queue_.push_back({part.get(), id, c});
    part->own = (chunks.size() > first) ? (chunks.size() - first + ranks - 1) / ranks : 0;
    next_number_ += chunks.size();
    parts_.push_back(std::move(part));
    work_ready_.notify_all();
    return id;
}

bool OwnChunkCopier::part_done(std::size_t id) const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    const Part& part = *parts_.at(id);
    return part.written.load() == part.own;
}

void OwnChunkCopier::rethrow_failure() const
{
    std::exception_ptr failure;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        failure = failure_;
    }
    if (failure)
        std::rethrow_exception(failure);
}

void OwnChunkCopier::finish()
{
    stop();
    rethrow_failure();
}

bool OwnChunkCopier::take(Work& work)
{
    std::unique_lock<std::mutex> lock(mutex_);
    work_ready_.wait(lock, [&] { return !queue_.empty() || closed_ || failed_; });
    if (queue_.empty() || failed_)
        return false;
    work = queue_.front();
    queue_.pop_front();
    return true;
}

void OwnChunkCopier::work()
{
    // Each thread opens several of a chunk's files at once, the `opens`
    // tuning shared out as among the ring's readers: opened one at a
    // time, the metadata round trips of small files set the pace
    // (bench/mover's 20,000-file tree: 1.30x of the read-once limit
    // with one, 1.09-1.21x with four).
    std::unique_ptr<SourceReader> reader;
    std::size_t reading = static_cast<std::size_t>(-1);  // the id of the part it reads
    std::vector<char> buffer(std::min<std::uint64_t>(options_.chunk_size, kIoBytes));
    Work work;
    while (take(work)) {
        try {
            copy(work, reader, reading, buffer);
        } catch (...) {
            {
                const std::lock_guard<std::mutex> lock(mutex_);
                if (!failure_)
                    failure_ = std::current_exception();
                failed_ = true;
            }
            work_ready_.notify_all();
            return;
        }
    }
}

void OwnChunkCopier::copy(const Work& work, std::unique_ptr<SourceReader>& reader, std::size_t& reading,
                          std::vector<char>& buffer)
{
    const Plan& plan = *work.part->plan;
    if (!reader)
        reader = std::make_unique<SourceReader>(plan, std::max(1u, options_.opens / streams_), changes_);
    else if (work.part_id != reading)
        reader->use_plan(plan);
    reading = work.part_id;
    const Chunk& chunk = (*work.part->chunks)[work.chunk];
    // The read rate limit (DLSTAGE_RATE_LIMIT, per node): a chunk starts
    // once this rank's reads so far fit the rate.
    read_throttle(options_.read_rate_limit).account(chunk.bytes);
    for (const Chunk& part : split_chunk(chunk, buffer.size())) {
        {
            const IoScope reading_now(stage_io(), Io::Reading);
            reader->read(part, buffer.data());
        }
        const IoScope writing(stage_io(), Io::Writing);
        work.part->writer->write(part, buffer.data());
    }
    bytes_ += chunk.bytes;
    ++work.part->written;
    report(++done_);
}

// The first chunk is told at once: under a read rate limit the next may
// come after the job's time limit (launch/mover_limit tells a mover's
// progress by it).
void OwnChunkCopier::report(std::size_t done_now)
{
    if (!progress_)
        return;
    std::unique_lock<std::mutex> lock(report_, std::try_to_lock);
    if (lock && (done_now == 1 || std::chrono::steady_clock::now() - last_report_ > std::chrono::milliseconds(200))) {
        last_report_ = std::chrono::steady_clock::now();
        progress_(done_.load(), bytes_.load());
    }
}

ExchangeResult copy_own_chunks(const std::vector<Chunk>& chunks, const Plan& plan, TreeWriter& writer, int rank,
                               int ranks, const ExchangeOptions& options, const ProgressFn& progress,
                               ProvingReads* changes)
{
    OwnChunkCopier copier(rank, ranks, options, progress, changes);
    copier.add({&plan, &writer, &chunks});
    copier.finish();
    return {copier.bytes_read()};
}

}  // namespace dlstage::stager
