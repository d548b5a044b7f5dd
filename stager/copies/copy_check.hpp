// What a job checks before it reuses a copy in a shared tier, and how it
// fetches back what the site's purge took: the list of what the copy holds
// (its contents file: a plan of the copy, in the plan's wire format; the
// source's identity, a digest of the plan, is stager/plan/plan's
// source_identity), and a check of the copy against that list by stat
// alone, many in flight, each rank its share.  No MPI here: the caller
// shares the work out (stager/tiers/shared_tier.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "config/config.hpp"
#include "stager/plan/plan.hpp"

namespace dlstage::stager {

// The contents file `name` in the directory open as dir_fd (shown in
// messages as `shown`), replaced atomically; read_contents_file: its bytes
// (serialize's; the caller broadcasts and deserializes them), nothing when
// there is none, Error when it cannot be read or is not the caller's.
void write_contents(int dir_fd, const std::string& shown, const std::string& name, const Plan& contents);
// The same, of contents serialized already.
void write_contents(int dir_fd, const std::string& shown, const std::string& name, const std::string& serialized);
std::optional<std::string> read_contents_file(const std::string& path);

struct CopyCheck {
    std::uint64_t checked = 0;
    std::uint64_t missing = 0;     // absent, or of another type
    std::uint64_t wrong_size = 0;  // files only
    std::uint64_t foreign = 0;     // not owned by CheckShare::owner (also in bad)
    std::uint64_t changed = 0;     // changed after CheckShare::sealed_ns (also in bad)
    std::vector<std::size_t> bad;  // indexes into contents.entries, sorted
    std::int64_t oldest = std::numeric_limits<std::int64_t>::max();  // min purge clock of the files seen
};

struct CheckShare {
    int rank = 0, ranks = 1;  // entries i with i % ranks == rank
    unsigned threads = 16;    // stats in flight
    PurgeBy purge_by = PurgeBy::Atime;
    bool refresh_atime = false;  // a site's refresh_on_use
    uid_t owner = ::geteuid();   // whose every entry must be
    // Node caches: > 0, an entry whose ctime is later (ns since the epoch)
    // was changed after the copy was sealed (job/copy_record.hpp).
    std::int64_t sealed_ns = 0;
    // Shared copies that keep the source's mtimes: a file whose mtime is
    // not its entry's (in seconds: some file systems keep no more) was
    // written to in place.
    bool compare_mtime = false;
    // A copy brought up to a changed source: entries (by index into the
    // contents checked) that the source changed since the copy was made,
    // fetched again whatever the copy's stat says (a rewrite within the
    // same second, a chmod).  Empty: none known.
    const std::vector<char>* known_changed = nullptr;
};

// What changed at the source between the plan a copy was made from and
// the plan now (entries matched by path).  changed: per entry of `now`, a
// file of another size, mtime (to the nanosecond) or mode, or a symlink of
// another target; kind_changes: entries whose type differs, or directories
// whose mode differs (the repair makes neither: the copy is staged again);
// known: per entry of `now`, `then` has an entry of its path.
struct PlanChanges {
    std::vector<char> changed;
    std::vector<char> known;
    std::uint64_t kind_changes = 0;
};
PlanChanges changes_between(const Plan& then, const Plan& now);

// st's ctime in ns since the epoch.
std::int64_t ctime_ns(const struct stat& st);

// Checks this share of contents' entries below the directory open as
// copy_fd (lstat: a symlink is checked as a symlink).
CopyCheck check_copy(int copy_fd, const Plan& contents, const CheckShare& share);

// What a job added to the copy: the names in this share of its directories
// (the top one is number 0, then contents' directories in order; those
// with number % ranks == rank) that contents does not list, as paths below
// the copy, sorted.  A directory that is gone is skipped (check_copy
// reports it); an added directory is one name, whatever it holds.
std::vector<std::string> find_added(int copy_fd, const Plan& contents, int rank, int ranks, unsigned threads = 16);

// Fetches entry `entry` (a file) of the plan from the source into the copy
// again, under a temporary name renamed over what is there.  Throws Error
// when the source changed (size or mtime) or cannot be read.
void fetch_again(const Plan& plan, std::size_t entry, int copy_fd, const std::string& shown, bool keep_times);

}  // namespace dlstage::stager
