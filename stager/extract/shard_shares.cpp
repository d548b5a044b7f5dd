#include "stager/extract/shard_shares.hpp"

#include <algorithm>
#include <cstring>
#include <xxhash.h>

#include "lib/byte_reader.hpp"

namespace dlstage::stager {

std::vector<std::size_t> shards_of_rank(std::size_t shards, int rank, int ranks)
{
    std::vector<std::size_t> mine;
    for (auto i = static_cast<std::size_t>(rank); i < shards; i += static_cast<std::size_t>(ranks))
        mine.push_back(i);
    return mine;
}

std::vector<std::uint64_t> name_hashes(const std::vector<ShardOutcome>& outcomes)
{
    std::vector<std::uint64_t> hashes;
    for (const ShardOutcome& outcome : outcomes)
        for (const std::string& name : outcome.names)
            hashes.push_back(XXH3_64bits(name.data(), name.size()));
    return hashes;
}

bool any_repeated(std::vector<std::uint64_t> hashes)
{
    std::sort(hashes.begin(), hashes.end());
    return std::adjacent_find(hashes.begin(), hashes.end()) != hashes.end();
}

namespace {
constexpr const char* kWhat = "directory times from another rank";
}  // namespace

// Per shard: its index, its count of directories; per directory: the path's
// length, the path, the two timespecs.  Both ends are the same binary.
std::string pack_directory_times(const std::vector<std::size_t>& shards, const std::vector<ShardOutcome>& outcomes)
{
    std::string out;
    for (std::size_t k = 0; k < shards.size() && k < outcomes.size(); ++k) {
        put_bytes<std::uint64_t>(out, shards[k]);
        put_bytes<std::uint64_t>(out, outcomes[k].directory_times.size());
        for (const auto& [path, times] : outcomes[k].directory_times) {
            put_bytes<std::uint64_t>(out, path.size());
            out += path;
            put_bytes(out, times);
        }
    }
    return out;
}

std::vector<std::pair<std::size_t, ShardOutcome>> unpack_directory_times(const std::string& bytes)
{
    std::vector<std::pair<std::size_t, ShardOutcome>> shards;
    ByteReader r(bytes, kWhat);
    while (!r.done()) {
        const auto index = r.get<std::uint64_t>();
        const auto count = r.get<std::uint64_t>();
        ShardOutcome outcome;
        for (std::uint64_t d = 0; d < count; ++d) {
            const auto length = r.get<std::uint64_t>();
            std::string path(r.take(length), length);
            outcome.directory_times.emplace_back(std::move(path), r.get<std::array<struct timespec, 2>>());
        }
        shards.emplace_back(static_cast<std::size_t>(index), std::move(outcome));
    }
    return shards;
}

}  // namespace dlstage::stager
