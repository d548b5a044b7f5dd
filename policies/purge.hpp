// When the site's purge will take a copy in a shared tier (SCRATCH), and
// whether a job should be told.  dlstage never deletes or touches files to
// dodge the purge: it only knows the rule the site wrote in the tier
// (purge_days, purge_by, warn_days) and the times of the copy's files as
// the stager last saw them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// A file's times, seconds since the epoch.
struct FileTimes {
    std::int64_t atime = 0, mtime = 0, ctime = 0;
};

// The time a file's age counts from, as the site's purge tool counts it.
std::int64_t purge_clock(PurgeBy by, const FileTimes& times);

// Whether a copy written to this tier keeps its source's mtimes: not in a
// shared tier purged by mtime, where a file kept at its source's old mtime
// would be purged at once; there its age counts from when it was written.
bool keeps_source_mtimes(const Tier& tier);

// Whether a kept copy's mtimes tell a write to it since it was listed: so
// in a copy that keeps its source's mtimes, and in an unpacked one (listed
// as extraction wrote it, mtimes and all).
bool mtimes_tell_writes(bool unpacked, const Tier& tier);

// When a copy whose oldest file (by purge_clock) dates from `oldest` will
// start to be purged; nothing when the tier has no purge.
std::optional<std::int64_t> purge_date(const PurgeRule& rule, std::int64_t oldest);

// At submit: allowed always (a purged copy is staged again without fuss);
// the reason is a warning line when the copy will be purged within
// warn_days of `now` (or already may have been), empty otherwise.
Verdict purge_warning(const PurgeRule& rule, const std::string& dataset, const std::string& tier, std::int64_t oldest,
                      std::int64_t now);


}  // namespace dlstage::policy
