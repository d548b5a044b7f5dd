#include "stager/transfer/own_chunks.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "lib/sys/parallel.hpp"
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

ExchangeResult copy_own_chunks(const std::vector<Chunk>& chunks, const Plan& plan, TreeWriter& writer, int rank,
                               int ranks, const ExchangeOptions& options, const ProgressFn& progress,
                               ProvingReads* changes)
{
    std::vector<std::size_t> mine;
    for (std::size_t c = static_cast<std::size_t>(rank); c < chunks.size(); c += static_cast<std::size_t>(ranks))
        mine.push_back(c);
    // Readers and writers are the same threads here: each reads a chunk
    // and writes it, as many streams as the ring's readers and writers.
    const unsigned threads = std::max(1u, options.readers + options.writers);
    std::atomic<std::size_t> next{0}, done{0};
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<bool> failed{false};
    std::mutex report;
    const auto begin = std::chrono::steady_clock::now();
    auto last = begin;
    // The read rate limit (DLSTAGE_RATE_LIMIT, per node): a chunk starts
    // once this rank's reads so far fit the rate.
    Throttle& throttle = read_throttle(options.read_rate_limit);
    // One index per worker; the first error stops the others' loops and
    // is rethrown here.
    for_each_index(threads, threads, [&](std::size_t) {
        // Each thread opens several of a chunk's files at once, the `opens`
        // tuning shared out as among the ring's readers: opened one at a
        // time, the metadata round trips of small files set the pace
        // (bench/mover's 20,000-file tree: 1.30x of the read-once limit
        // with one, 1.09-1.21x with four).
        SourceReader reader(plan, std::max(1u, options.opens / threads), changes);
        std::vector<char> buffer(std::min<std::uint64_t>(options.chunk_size, kIoBytes));
        const struct Flag {
            std::atomic<bool>& failed;
            ~Flag()
            {
                if (std::uncaught_exceptions() > 0)
                    failed = true;
            }
        } flag{failed};
        for (std::size_t k = next++; k < mine.size() && !failed; k = next++) {
            const Chunk& chunk = chunks[mine[k]];
            throttle.account(chunk.bytes);
            for (const Chunk& part : split_chunk(chunk, buffer.size())) {
                {
                    const IoScope reading(stage_io(), Io::Reading);
                    reader.read(part, buffer.data());
                }
                const IoScope writing(stage_io(), Io::Writing);
                writer.write(part, buffer.data());
            }
            const std::size_t done_now = ++done;
            bytes += chunk.bytes;
            // The first chunk is told at once: under a read rate limit the
            // next may come after the job's time limit (launch/mover_limit
            // tells a mover's progress by it).
            std::unique_lock<std::mutex> lock(report, std::try_to_lock);
            if (lock && (done_now == 1 || std::chrono::steady_clock::now() - last > std::chrono::milliseconds(200))) {
                last = std::chrono::steady_clock::now();
                if (progress)
                    progress(done.load(), bytes.load());
            }
        }
    });
    return {bytes.load()};
}

}  // namespace dlstage::stager
