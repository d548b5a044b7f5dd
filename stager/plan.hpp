// The plan of one staging: every entry to create on the nodes, in a fixed
// order all ranks share.  Rank 0 builds it with one walk of the source (the
// only metadata load on the parallel file system) and broadcasts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/config.hpp"

namespace dlstage::stager {

enum class EntryType : std::uint8_t { File = 1, Dir = 2, Symlink = 3 };

struct Entry {
    EntryType type = EntryType::File;
    std::string path;    // relative to the source root (and to the destination)
    std::uint32_t mode = 0;  // permission bits only
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
    std::uint64_t size = 0;  // files
    std::string target;      // symlinks
};

struct Plan {
    std::string source_root;  // where entry paths are read from
    Format format = Format::Auto;  // File, Dir, Tar or Squashfs
    bool single_file = false;      // the job sees the one file, not the directory
    std::vector<Entry> entries;    // directories before their contents

    std::uint64_t total_bytes() const;
    std::uint64_t file_count() const;   // files and symlinks
    std::uint64_t entry_count() const { return entries.size(); }
};

// Walks the source as the calling user (walk_dataset, with walk_threads
// threads listing directories in parallel).  Throws Error naming what cannot
// be read; special files (devices, fifos, sockets) are refused.
Plan build_plan(const Dataset& dataset, unsigned walk_threads = 16);

std::string serialize(const Plan& plan);
Plan deserialize(const std::string& bytes);  // throws Error on malformed input

}  // namespace dlstage::stager
