// Making a dataset's manifest (dataset/manifest: its format, reading it, and
// whether it is still current): `dlstage catalog scan NAME` walks the
// source and reads every file once; `catalog show` compares a manifest
// with a walk of the source now.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "dataset/manifest.hpp"
#include "stager/plan/plan.hpp"

namespace dlstage::stager {

using dlstage::Manifest;

// site.manifest_dir/NAME.manifest
std::string manifest_path(const Config& config, const std::string& dataset);

// Walks the dataset's source (build_plan) and reads every file once with
// `threads` readers, checking it did not change meanwhile.  Throws Error.
Manifest scan_dataset(const Dataset& dataset, unsigned threads);

// How the source (walked now) differs from the manifest: at most `limit`
// lines such as "train/x.jpg: size 120 -> 0" or "val: added", and the
// number of differences in all.
struct SourceChanges {
    std::uint64_t count = 0;
    std::vector<std::string> examples;
};
SourceChanges changes_since(const Manifest& manifest, const Plan& now, std::size_t limit);

}  // namespace dlstage::stager
