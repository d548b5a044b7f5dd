// Whether the source still is what a plan says, file by file.  A plan made
// from a manifest is current as far as its directories go (dataset/manifest):
// a file rewritten in place changes no directory.  Before a kept copy is
// reused on such a plan's word (nothing of the source is read then), each
// rank lstats its share of the source's files and symlinks, many in
// flight, and compares them with the plan by the stager's one rule for a
// file (below: type, size, mtime), the rule the source reader
// (stager/transfer/source_reader) applies to each file it opens.  No MPI
// here: the caller shares the work out and adds up (stager/steps/collectives).
#pragma once

#include <cstdint>
#include <string>
#include <sys/stat.h>

#include "stager/plan/plan.hpp"

namespace dlstage::stager {

// The one rule for a source file that is not what the plan says: every
// file opened is compared with its plan entry (size and mtime), so a plan
// made earlier (from a manifest, or a walk minutes ago) never stages stale
// or torn data.  "" when st matches entry, else the whole message:
// "SOURCE/PATH changed since it was planned (size A -> B): run again".
std::string changed_since_planned(const std::string& path, const Entry& entry, const struct stat& st);
// The same rule, the difference alone: "size A -> B", "mtime T1 -> T2" or "".
std::string how_changed(const Entry& entry, const struct stat& st);
// The rule's test alone, with nothing allocated: true when st is as planned.
bool as_planned(std::uint64_t size, std::int64_t mtime_sec, std::uint32_t mtime_nsec, const struct stat& st);
// "SOURCE/PATH changed since it was planned (HOW): run again": the message
// for a file found otherwise than planned, whatever found it.
std::string changed_message(const std::string& path, const std::string& how);

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
