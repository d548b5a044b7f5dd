#include "stager/transfer/chunks.hpp"

#include <algorithm>

#include "lib/error.hpp"

namespace dlstage::stager {

std::vector<Chunk> layout_chunks(const Plan& plan, std::uint64_t chunk_size)
{
    if (chunk_size == 0 || chunk_size > UINT32_MAX)
        throw Error("a chunk size of " + std::to_string(chunk_size) + " bytes is not between 1 byte and 4 GiB");
    std::vector<Chunk> chunks;
    Chunk current;
    const EntryList& entries = plan.entries;
    auto held = plan.held_prefixes.begin();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::uint64_t size = entries.file_size(i);
        if (size == 0)
            continue;  // not a file, or an empty one: created with the skeleton
        // A file an unfinished copy holds the start of goes on from there.
        std::uint64_t from = 0;
        for (; held != plan.held_prefixes.end() && held->entry <= i; ++held)
            if (held->entry == i)
                from = held->bytes;  // less than its size (plan_part)
        for (std::uint64_t offset = from; offset < size;) {
            const std::uint64_t room = chunk_size - current.bytes;
            const std::uint64_t length = std::min(room, size - offset);
            current.pieces.push_back({offset, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(length)});
            current.bytes += length;
            offset += length;
            if (current.bytes == chunk_size || current.pieces.size() >= kMostFilesPerChunk) {
                chunks.push_back(std::move(current));
                current = Chunk{};
            }
        }
    }
    if (current.bytes > 0)
        chunks.push_back(std::move(current));
    return chunks;
}

}  // namespace dlstage::stager
