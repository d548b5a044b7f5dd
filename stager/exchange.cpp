#include "stager/exchange.hpp"

#include <chrono>
#include <cstring>
#include <mpi.h>
#include <thread>
#include <xxhash.h>

#include "lib/error.hpp"

namespace dlstage::stager {

namespace {
constexpr std::size_t kHashBytes = sizeof(XXH64_hash_t);

// Keeps a reading rank under its byte rate (a courtesy to a shared file
// system, and how tests make a transfer last long enough to interrupt).
class Throttle {
public:
    explicit Throttle(double rate) : rate_(rate), start_(std::chrono::steady_clock::now()) {}
    void account(std::uint64_t bytes)
    {
        if (rate_ <= 0)
            return;
        total_ += bytes;
        const auto due = start_ + std::chrono::duration<double>(static_cast<double>(total_) / rate_);
        std::this_thread::sleep_until(due);
    }

private:
    double rate_;
    std::chrono::steady_clock::time_point start_;
    std::uint64_t total_ = 0;
};
}  // namespace

void exchange_chunks(const std::vector<Chunk>& chunks, SourceReader& reader, TreeWriter& writer,
                     const ExchangeOptions& options, const ProgressFn& progress)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<char> buffer(options.chunk_size + kHashBytes);
    Throttle throttle(options.read_rate_limit);
    std::uint64_t bytes_done = 0;

    for (std::size_t c = 0; c < chunks.size(); ++c) {
        const Chunk& chunk = chunks[c];
        const int owner = static_cast<int>(c % static_cast<std::size_t>(size));
        const std::size_t bytes = static_cast<std::size_t>(chunk.bytes);
        if (rank == owner) {
            reader.read(chunk, buffer.data());
            const XXH64_hash_t hash = XXH3_64bits(buffer.data(), bytes);
            std::memcpy(buffer.data() + bytes, &hash, kHashBytes);
            throttle.account(bytes);
        }
        MPI_Bcast(buffer.data(), static_cast<int>(bytes + kHashBytes), MPI_BYTE, owner, MPI_COMM_WORLD);
        if (rank != owner) {
            XXH64_hash_t sent = 0;
            std::memcpy(&sent, buffer.data() + bytes, kHashBytes);
            if (XXH3_64bits(buffer.data(), bytes) != sent)
                throw Error("chunk " + std::to_string(c) + " arrived corrupted (checksum mismatch)");
        }
        writer.write(chunk, buffer.data());
        bytes_done += chunk.bytes;
        progress(c + 1, bytes_done);
    }
}

}  // namespace dlstage::stager
