// A dataset's parts unpacked by its format: the one place that says which
// unpacking each format takes.  A new format adds its unpacking beside the
// others in stager/extract/ and its lines here; nothing above asks which
// format it unpacks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "facts/dataset_format.hpp"
#include "stager/extract/extract.hpp"

namespace dlstage::stager {

// Whether the format's parts are unpacked into a directory that exists
// (tar shards: the caller makes dest first), or make dest themselves
// (squashfs: dest must not exist yet, its parent must).
bool unpacks_into_existing_dir(Format format);

// Every part, in order, into dest, on up to `threads` threads: tar shards
// as `tar -x` of each in turn leaves them (extract_shards; clear_dest
// empties dest, making it again, for its in-order retry), one squashfs
// image, or an image set merged (scratch: a directory of the caller's on
// dest's file system).  Throws Error naming the part; what it wrote stays
// for the caller to remove.
ExtractStats extract_parts(Format format, const std::vector<std::string>& parts, const std::string& dest,
                           const std::string& scratch, unsigned threads, const std::function<void()>& clear_dest,
                           ExtractBudget& budget);

// Whether several ranks may unpack the parts into one existing tree, each
// its own with extract_part (tar shards); else one rank unpacks them all
// with extract_parts (an image, or an image set, whose merge needs all).
bool extracts_part_by_part(Format format);

// One part into dest (which exists), its directories' times left in
// `outcome` for restore_directory_times once every part is in.
ExtractStats extract_part(Format format, const std::string& part, const std::string& dest, ShardOutcome& outcome,
                          ExtractBudget& budget);

}  // namespace dlstage::stager
