// What a source's name says about its format: the one list of archive and
// image suffixes and the one glob test, for the catalog's format = "auto",
// the name a path is staged under, pack's output, the submit-side probe and
// the stager's plan.  Facts about names only; which mode may use which
// format is a rule (policies/staging_mode.hpp).
#pragma once

#include <string>
#include <string_view>

namespace dlstage {

enum class Format { Auto, Dir, File, Tar, Squashfs };

std::string to_string(Format format);

// Has a '*', '?' or '[': a pattern for tar shards, not one file.
bool is_glob(std::string_view path);

// The archive or image suffix `name` ends with (".tar.gz", ".tgz", ".tar",
// ".sqfs", ".squashfs", ...), or "" when it has none.
std::string_view archive_suffix(std::string_view name);

// Squashfs for an image suffix, Tar for a tar suffix or a glob, else Auto
// (only a stat can tell a file from a directory).
Format format_from_name(std::string_view source);

// A glob of tar shards or of squashfs images (an image set): each match is
// a part of the dataset, staged under its base name.  known: the format
// its name or catalog entry gives.
bool is_part_glob(std::string_view source, Format known);

}  // namespace dlstage
