// Whether the source still is what a plan says, file by file.  A plan made
// from a manifest is current as far as its directories go (dataset/manifest):
// a file rewritten in place changes no directory.  Before a kept copy is
// reused on such a plan's word (nothing of the source is read then), each
// rank lstats its share of the source's files and symlinks, many in
// flight, and compares them with the plan by the stager's one rule
// (stager/transfer/source_reader: type, size, mtime).  No MPI here: the caller
// shares the work out and adds up (stager/stage_dataset.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "stager/plan/plan.hpp"

namespace dlstage::stager {

struct SourceDrift {
    std::uint64_t checked = 0;
    std::uint64_t changed = 0;  // gone, of another type, size, mtime or target
    std::string example;        // the first one this share found: "PATH: size A -> B"
};

// This share (entries i with i % ranks == rank) of plan's files and
// symlinks, below plan.source_root.  Directories are left out: the
// manifest's own check looked at every one.  Which: every file and
// symlink, or only the empty files (no read ever opens one, so the reads
// that prove the rest cannot see one written to since the scan).
enum class Checked { All, EmptyFiles };
SourceDrift check_source(const Plan& plan, int rank, int ranks, unsigned threads = 16, Checked which = Checked::All);

}  // namespace dlstage::stager
