// What a cheap look at a dataset's source tells (dataset/source_probe finds
// it): the fact the admission and staging-mode rules decide over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "facts/dataset_format.hpp"

namespace dlstage {

struct SourceFacts {
    enum class State { Present, Missing, Unreadable, Unfit };
    State state = State::Present;
    std::string problem;                 // for Missing/Unreadable/Unfit: why
    Format format = Format::Auto;        // File, Dir, Tar or Squashfs when present
    std::optional<std::uint64_t> bytes;  // source bytes, when known
    std::optional<std::uint64_t> files;  // entries (inodes) the source holds, when known
    std::vector<std::uint64_t> parts;    // each shard's bytes, in staging order, when a glob told them
    bool from_manifest = false;          // bytes and files are the manifest's
    std::int64_t manifest_scanned = 0;   // probe_far_source: the manifest's scan time (0: none)
    std::string note;                    // why a manifest there was not used: a line for the user
};

}  // namespace dlstage
