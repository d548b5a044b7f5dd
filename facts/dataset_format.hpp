// What a source's name says about its format: the one list of archive and
// image suffixes and the one glob test, for the catalog's format = "auto",
// the name a path is staged under, pack's output, the submit-side probe and
// the stager's plan.  Facts about names only; which mode may use which
// format is a rule (policies/staging_mode.hpp).
#pragma once

#include <string>
#include <string_view>

#include "facts/names.hpp"

namespace dlstage {

enum class Format { Auto, Dir, File, Tar, Squashfs };

// What a format is and what the rest of dlstage asks of it, one line per
// format (kFormats in the .cpp): a new format is a line there, its suffixes
// beside it, its modes in policies/staging_mode and its unpacking in
// stager/extract/extract_parts.
struct FormatTraits {
    Format format;
    const char* name;          // the catalog's `format`, a manifest's header
    const char* parts;         // what a glob's matches are ("tar shards"); "": it has none
    bool counted_as_one_file;  // a single file of it counts as one file at submit (not tar's members)
};
const FormatTraits& traits_of(Format format);

// "auto", "dir", "file", "tar", "squashfs".
const NameTable<Format>& format_names();
std::string to_string(Format format);
// Whether a glob of files of this format names a dataset's parts (tar
// shards, an image set).
bool comes_in_parts(Format format);

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
