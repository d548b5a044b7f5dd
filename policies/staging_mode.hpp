// Which source formats each staging mode can use: copy takes any; extract
// needs archives (tar shards or a squashfs image); mount needs one squashfs
// image.  Asked twice, in the same words: by the configuration, from the
// format the source's name or format key declares, and by the stager, from
// what it found at the source.
#pragma once

#include <string>

#include "lib/config.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// one_file: the source is a single file (not a directory or a glob).
bool mode_takes(Mode mode, Format format, bool one_file);

// The catalog's check (Auto: the name does not tell the format).
Verdict mode_fits_declared_format(Mode mode, Format declared);

// The stager's check of what it found at `source`.
Verdict mode_fits_source(Mode mode, Format found, bool one_file, const std::string& source);

}  // namespace dlstage::policy
