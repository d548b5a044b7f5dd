// Tar shards unpacked into one shared copy by every rank, each its own
// (stager/steps/unpack_step): which shards are a rank's, and what the ranks
// tell rank 0 afterwards so that the copy is what `tar -x` of each shard in
// turn would leave.  No MPI here: the unit tests take it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stager/extract/extract.hpp"

namespace dlstage::stager {

// Shard i is unpacked by rank i mod ranks.
std::vector<std::size_t> shards_of_rank(std::size_t shards, int rank, int ranks);

// A 64-bit hash of every name the shards wrote (not directories): what the
// ranks send rank 0 to find shards that overlap, 8 bytes a name instead of
// the name.
std::vector<std::uint64_t> name_hashes(const std::vector<ShardOutcome>& outcomes);

// True when a hash is there twice: two shards (or one, twice) wrote the same
// name, or two names share a hash.  Either way the shards are unpacked
// again in order, which is always right.
bool any_repeated(std::vector<std::uint64_t> hashes);

// The directories' times of a rank's shards, each with its shard's index,
// as bytes for rank 0, and back (throws Error on malformed bytes).
std::string pack_directory_times(const std::vector<std::size_t>& shards, const std::vector<ShardOutcome>& outcomes);
std::vector<std::pair<std::size_t, ShardOutcome>> unpack_directory_times(const std::string& bytes);

}  // namespace dlstage::stager
