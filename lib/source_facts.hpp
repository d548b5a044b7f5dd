// What can be known about a dataset's source cheaply: one stat, or a glob
// of tar shards.  Never a walk of a tree on the parallel file system: the
// bytes and files of a directory stay unknown until a manifest knows them
// (the roadmap's `dlstage catalog scan`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lib/config.hpp"

namespace dlstage {

struct SourceFacts {
    enum class State { Present, Missing, Unreadable };
    State state = State::Present;
    std::string problem;                 // for Missing/Unreadable: why
    Format format = Format::Auto;        // File, Dir, Tar or Squashfs when present
    std::optional<std::uint64_t> bytes;  // source bytes, when known
    std::optional<std::uint64_t> files;  // entries (inodes) the source holds, when known
};

SourceFacts probe_source(const Dataset& dataset);

}  // namespace dlstage
