#include "stager/chunks.hpp"

#include <algorithm>

namespace dlstage::stager {

std::vector<Chunk> layout_chunks(const Plan& plan, std::uint64_t chunk_size)
{
    std::vector<Chunk> chunks;
    Chunk current;
    for (std::size_t i = 0; i < plan.entries.size(); ++i) {
        const Entry& e = plan.entries[i];
        if (e.type != EntryType::File || e.size == 0)
            continue;  // empty files are created with the skeleton
        for (std::uint64_t offset = 0; offset < e.size;) {
            const std::uint64_t room = chunk_size - current.bytes;
            const std::uint64_t length = std::min(room, e.size - offset);
            current.pieces.push_back({i, offset, length});
            current.bytes += length;
            offset += length;
            if (current.bytes == chunk_size) {
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
