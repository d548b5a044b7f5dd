// One tar shard of `dlstage pack`, written with libarchive.
#pragma once

#include <functional>

#include <cstdint>
#include <string>
#include <vector>

#include <archive.h>

#include "lib/sys/fd.hpp"
#include "pack/pack_tree.hpp"

namespace dlstage::pack {

class ShardWriter {
public:
    explicit ShardWriter(const std::string& path);
    ~ShardWriter();
    ShardWriter(const ShardWriter&) = delete;
    ShardWriter& operator=(const ShardWriter&) = delete;

    // The entry of the tree below root; buffer carries file data.
    void add(const std::string& root, const PackEntry& entry, const Metadata& meta, std::vector<char>& buffer);

    // The end marker, then the data on disk before the shard gets its name.
    void finish();

private:
    [[noreturn]] void throw_archive_error(const std::string& member = "");
    void copy_data(int fd, const std::string& path, std::uint64_t size, std::vector<char>& buffer);

    std::string path_;
    archive* archive_;
    Fd fd_;
};

// Called after each member is written.
using MemberWritten = std::function<void(const PackEntry& member)>;

// Writes the members of shard (indexes into tree) to path.
void write_shard(const std::string& root, const PackTree& tree, const PackShard& shard, const std::string& path,
                 std::vector<char>& buffer, const MemberWritten& written = {});

}  // namespace dlstage::pack
