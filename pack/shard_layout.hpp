// Which files of a dataset directory go into which tar shard of
// `dlstage pack`: arithmetic over names and sizes, no I/O, so it can be tested on made-up
// trees of any size.
//
// A sample is the WebDataset unit: the files of one directory that share
// their name up to the first '.' (n01440764_10026.JPEG and
// n01440764_10026.cls).  A sample never spans two shards; a directory goes
// into every shard that holds something below it, so each shard extracts on
// its own with the right directory modes.  An empty directory is a sample
// of its own (otherwise no shard would recreate it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage::pack {

enum class PackEntryType { File, Dir, Symlink };

struct PackEntry {
    std::string path;  // relative to the packed directory, without "./"
    PackEntryType type = PackEntryType::File;
    std::uint64_t size = 0;  // a file's bytes; a symlink's target length (as lstat says); 0 for directories
};

struct PackShard {
    std::vector<std::size_t> members;  // indexes into the entries, sorted by path (parents first)
    std::uint64_t bytes = 0;           // estimated size of the tar file (tar_member_bytes + end marker)
    std::size_t samples = 0;
};

struct ShardLayout {
    std::vector<PackShard> shards;
    std::size_t sample_count = 0;
    // The largest cost of placing one sample: its members plus the
    // directories above it.  Shard sizes differ by at most this much.
    std::uint64_t largest_sample_bytes = 0;
};

// The two zero blocks that end a tar archive.
inline constexpr std::uint64_t kTarEndBytes = 1024;

// Bytes an entry takes in a pax-restricted tar: a 512-byte header, the data
// padded to 512, and room for a pax extended header when ustar cannot hold
// the path, the link target or the size.  An estimate that errs high;
// owner ids above 2097151 (07777777) also need a pax header, which it does
// not count.
std::uint64_t tar_member_bytes(const PackEntry& entry);

// The sample an entry belongs to, for messages and tests:
// "dir/n01440764_10026" for "dir/n01440764_10026.JPEG".
std::string sample_name(std::string_view path);

// Exactly shard_count shards (>= 1), or as many as there are samples when
// there are fewer (at least one shard, even for an empty tree).
ShardLayout lay_out_shards_by_count(const std::vector<PackEntry>& entries, std::size_t shard_count);

// As few shards as the balancing needs so that none is estimated above
// max_shard_bytes.  Throws Error naming a sample that cannot fit alone.
ShardLayout lay_out_shards_by_size(const std::vector<PackEntry>& entries, std::uint64_t max_shard_bytes);

}  // namespace dlstage::pack
