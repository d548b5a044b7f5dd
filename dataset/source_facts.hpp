// What can be known about a dataset's source cheaply: one stat, or a glob
// of tar shards.  Never a walk of a tree on the parallel file system: the
// bytes and files of a directory come from its manifest (`dlstage catalog
// scan`) when there is a trusted one that is current at the root, read no
// further than its header; else they stay unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dlstage {

struct SourceFacts {
    enum class State { Present, Missing, Unreadable, Unfit };
    State state = State::Present;
    std::string problem;                 // for Missing/Unreadable/Unfit: why
    Format format = Format::Auto;        // File, Dir, Tar or Squashfs when present
    std::optional<std::uint64_t> bytes;  // source bytes, when known
    std::optional<std::uint64_t> files;  // entries (inodes) the source holds, when known
    bool from_manifest = false;          // bytes and files are the manifest's
    std::string note;                    // why a manifest there was not used: a line for the user
};

// manifest_dir: site.manifest_dir, where a catalog dataset's manifest may be.
SourceFacts probe_source(const Dataset& dataset, const std::string& manifest_dir = "");

// The files a glob of tar shards matches, sorted bytewise: the order they
// are staged in.  err: why the glob failed (no match is not a failure).
struct ShardMatches {
    std::vector<std::string> paths;
    int err = 0;

    // How many directories the shards sit in.
    std::size_t directories() const;
};
ShardMatches match_shards(const std::string& pattern);

}  // namespace dlstage
