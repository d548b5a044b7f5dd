// A dataset's manifest: what `dlstage catalog scan NAME` found in its source
// once (an admin's run), so that later checks need no walk of the parallel
// file system: every entry's type, mode, size and mtime, and each file's
// xxh3 digest.  Written as text, one entry a line, under
// site.manifest_dir/NAME.manifest:
//
//   dlstage-manifest 1
//   dataset imagenet
//   source /p/imagenet
//   root /p/imagenet
//   format dir
//   single_file 0
//   scanned 1763900000
//   files 1281167
//   bytes 150000000000
//   entries 1282167
//   TYPE MODE SIZE MTIME DIGEST PATH [TARGET]      (tab-separated; f d l)
//
// Paths and values have backslash, tab, newline and other control bytes
// escaped (\\, \t, \n, \xNN), so any name round-trips.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/config.hpp"
#include "stager/plan.hpp"

namespace dlstage::stager {

struct Manifest {
    std::string dataset;
    std::string source;        // the catalog's source when it was scanned
    std::int64_t scanned = 0;  // seconds since the epoch
    Plan plan;                 // the entries, as a walk would plan them
    std::vector<std::uint64_t> digests;  // xxh3 of each entry's bytes (0: not a file)
};

// site.manifest_dir/NAME.manifest
std::string manifest_path(const Config& config, const std::string& dataset);

// Walks the dataset's source (build_plan) and reads every file once with
// `threads` readers, checking it did not change meanwhile.  Throws Error.
Manifest scan_dataset(const Dataset& dataset, unsigned threads);

std::string manifest_text(const Manifest& manifest);
// Throws Error naming `name` and the line of the first problem.
Manifest parse_manifest(std::string_view text, const std::string& name);

// Written under a temporary name in the same directory, then renamed into
// place: a reader sees the old manifest or the new one, never half.
void write_manifest(const std::string& path, const Manifest& manifest);
Manifest read_manifest(const std::string& path);

// How the source (walked now) differs from the manifest: at most `limit`
// lines such as "train/x.jpg: size 120 -> 0" or "val: added", and the
// number of differences in all.
struct SourceChanges {
    std::uint64_t count = 0;
    std::vector<std::string> examples;
};
SourceChanges changes_since(const Manifest& manifest, const Plan& now, std::size_t limit);

}  // namespace dlstage::stager
