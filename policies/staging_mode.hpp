// Which source formats each staging mode can use: copy takes any; extract
// needs archives (tar shards or a squashfs image); mount needs one squashfs
// image.  Asked twice, in the same words: by the configuration, from the
// format the source's name or format key declares, and by the stager, from
// what it found at the source.
#pragma once

#include <cstddef>
#include <string>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// one_file: the source is a single file (not a directory or a glob).
bool mode_takes(Mode mode, Format format, bool one_file);

// The catalog's check (Auto: the name does not tell the format).
Verdict mode_fits_declared_format(Mode mode, Format declared, bool part_glob = false);

// The stager's check of what it found at `source`.
Verdict mode_fits_source(Mode mode, Format found, bool one_file, const std::string& source);

// What is at a dataset's source, as the submit-side probe and the stager's
// plan find it.
struct SourceShape {
    std::string source;              // the path or glob, for messages
    Format declared = Format::Auto;  // what its name or format key says
    bool is_dir = false;             // a directory (not a glob of shards)
    std::size_t shard_dirs = 0;      // tar shards: how many directories they sit in
};

// Whether the source can be what the dataset declares: tar shards must sit
// in one directory (each is staged under its base name); a directory can
// only be format "dir" (or undeclared).
Verdict source_fits_format(const SourceShape& shape);

// What decides whether a staging walks its source while it transfers
// (stager/plan/plan_segments) rather than first.
struct WalkFacts {
    Mode mode = Mode::Copy;
    Scope scope = Scope::Node;
    Cleanup cleanup = Cleanup::JobEnd;
    bool source_is_dir = false;
    bool has_manifest = false;  // the catalog keeps one for it (current or not)
    // A shared tier: a copy's record or an unfinished copy is there.
    bool copy_there = false;
};

// A directory copied with no manifest to plan from, to a node tier that
// ends with the job or as the first copy in a shared tier: its plan is
// walked in segments, each staged as soon as it is walked.  Not a node
// cache, nor a shared tier that holds a copy or an unfinished one, whose
// reuse, refresh or resume compares the whole plan before anything is
// written; nor archives (extract, mount), which are few files; a manifest
// makes the walk unnecessary (or, when stale, is said so and walked whole).
bool walks_while_transferring(const WalkFacts& facts);

}  // namespace dlstage::policy
