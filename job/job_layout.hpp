// Where one dataset of one job lives in a tier, as every party computes it:
// the prolog (creates tier_dir), the stager (fills partial_dir, renames it to
// dataset_dir, writes the ready marker last), task_init in slurmstepd
// (exports the path from the marker) and the epilog (removes tier_dir).
//
//   /dev/shm/dlstage/123/                      tier_dir (prolog, 0700, the user's)
//   /dev/shm/dlstage/123/imagenet/             dataset_dir: exactly the content
//   /dev/shm/dlstage/123/.partial-imagenet/    being written; never read by jobs
//   /dev/shm/dlstage/123/.incoming-imagenet/   archives waiting to be extracted
//   /dev/shm/dlstage/123/.ready-imagenet.toml  written last, atomically
//
// mode = "mount" adds two entries, and dataset_dir is a mount point:
//   /dev/shm/dlstage/123/.image-imagenet/       the staged squashfs image
//   /dev/shm/dlstage/123/.staged-imagenet.toml  the stager's marker (path: the image)
// The ready marker is written only once the image is mounted on dataset_dir.
//
// A shared tier (scope = "shared") has one directory per user, every node
// sees it, and copies stay there across jobs:
//   /p/scratch/dlstage/alice/                      tier_dir (prolog, 0700, alice's)
//   /p/scratch/dlstage/alice/imagenet/             the copy, reused by later jobs
//   /p/scratch/dlstage/alice/.ready-imagenet.toml  its record (job/copy_record.hpp)
//   /p/scratch/dlstage/alice/.contents-imagenet    what the copy must hold
//   /p/scratch/dlstage/alice/.lock-imagenet        held while a job stages it
//   /p/scratch/dlstage/alice/.resume-imagenet.toml what .partial-imagenet is a copy of,
//                                                  for the next attempt to go on from
//   /p/scratch/dlstage/alice/.walked-imagenet      a first copy staged while its source
//                                                  was walked: what it walked so far
//                                                  (the resume record's stand-in identity)
//   /p/scratch/dlstage/alice/.pieces-imagenet/3.0  the pieces rank 0 of attempt 3 wrote of
//                                                  files written in several, for the next
//                                                  attempt to go on from within a file
//   /p/scratch/dlstage/alice/.readers-imagenet/4242 job 4242 reads the copy in place
//   /p/scratch/dlstage/alice/.version-imagenet-4250/ a newer copy, made beside the one
//                                                  job 4242 reads (the record's path says
//                                                  which copy is the current one)
//
// A node cache (scope = "node", cleanup = "cache") keeps one entry per user
// and dataset on each node, laid out as a shared tier's copies are, in the
// user's cache directory below the tier root; the job directory (%j) holds
// only the job's ready marker, whose path points into the cache:
//   /dev/shm/dlstage/.cache/alice/                      cache_dir (prolog, 0700, alice's)
//   /dev/shm/dlstage/.cache/alice/imagenet/             the entry, reused by later jobs
//   /dev/shm/dlstage/.cache/alice/.ready-imagenet.toml  its record (job/copy_record.hpp)
//   /dev/shm/dlstage/.cache/alice/.contents-imagenet    what the entry must hold
//   /dev/shm/dlstage/.cache/alice/.lock-imagenet        held while a job stages it
//   /dev/shm/dlstage/123/.ready-imagenet.toml           the job's marker: path = the entry
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <toml++/toml.h>

#include "config/stage_spec.hpp"

namespace dlstage {

struct DatasetLayout {
    std::string tier_root;
    std::string tier_dir;
    std::string dataset_dir;
    std::string partial_dir;
    std::string incoming_dir;
    std::string ready_marker;
    std::string image_dir;       // mode = "mount": where the image is kept
    std::string staged_marker;   // mode = "mount": the image is complete here
    std::string lock_file;       // shared tiers: who is staging the dataset now
    std::string contents_file;   // shared tiers: what the copy holds
    std::string retired_dir;     // shared tiers: prefix of a replaced copy's name
    std::string resume_record;   // shared tiers: what partial_dir is a copy of (job/copy_record.hpp)
    std::string walked_list;     // shared tiers: what a first copy's walk found so far (plan segments)
    std::string pieces_dir;      // shared tiers: logs of the pieces of files written in part (stager/copies/piece_log)
    std::string readers_dir;     // shared tiers: a file per job that reads the copy in place
    std::string version_prefix;  // shared tiers: prefix of a copy made beside one in use (+ job id)
    std::string split_index;     // a split dataset: who holds which part (JSON, DLSTAGE_<NAME>_INDEX)
};

DatasetLayout dataset_layout(const StageItem& item, const TemplateValues& values);

// The same names relative to the tier directory (tier_dir "."): how the
// stager addresses them once the job directory it opened and checked is its
// working directory, so that no path to it is looked up again.
DatasetLayout dataset_layout_within(const StageItem& item);

// A node cache tier's directory for `user`'s entries:
// <tier root>/.cache/<user>.
std::string cache_dir_of(const Tier& tier, const std::string& user);
// Its parent, <tier root>/.cache, root's.
std::string cache_parent_of(const Tier& tier);
// The name of a node cache entry: the dataset's, or for a split dataset
// this node's share's, "NAME.split-NODE-of-NODES" (NODE from 0 in the job's
// node order): another job's share on this node, or a whole copy, is
// another entry, never replaced under a job that reads it.
std::string cache_entry_name(const StageItem& item, std::size_t nodes, std::size_t node);
// What a cache entry's name says: its dataset, and for a split share the
// number of shares (0: the whole dataset).  The inverse of cache_entry_name.
struct CacheEntryParts {
    std::string dataset;
    std::size_t shares = 0;
    std::size_t share = 0;  // which one, from 0
};
CacheEntryParts cache_entry_parts(const std::string& entry);
// Where `user`'s entry of item's dataset lives: tier_dir is cache_dir_of;
// nodes and node name a split dataset's share (cache_entry_name).
DatasetLayout cache_layout(const StageItem& item, const std::string& user, std::size_t nodes = 1, std::size_t node = 0);
// The same names relative to the cache directory (as dataset_layout_within).
DatasetLayout cache_layout_within(const StageItem& item, std::size_t nodes = 1, std::size_t node = 0);

// Why the stager finds no directory the prolog makes (`what`: "the job
// directory"), with what to check.  `restarts` is the job's
// SLURM_RESTART_COUNT: on a requeued job's later run the likely cause is
// Slurm itself.  Before 23.11, slurmd purges a requeued job's old
// credential state with a scan it skips when it scanned under 2 s ago, and
// then takes the new run for one whose prolog already ran.  A first run
// is told to resubmit (a slurmd restart may have cut its prolog short) and,
// if every job hits this, to look at `check`.
std::string unprepared_dir(const std::string& what, const std::string& dir, const std::string& problem,
                           const std::string& restarts, const std::string& check);

// What the stager records once a dataset is complete and verified on a node.
struct ReadyMarker {
    std::string dataset;
    std::string tier;
    std::string source;
    std::string path;  // what DLSTAGE_<NAME> holds: the file, or the directory
    std::uint64_t bytes = 0;
    std::uint64_t files = 0;
    std::string index;  // a split dataset: the index's path (DLSTAGE_<NAME>_INDEX); "" otherwise
};

void write_ready_marker(const std::string& marker_path, const ReadyMarker& marker);

// The marker, or nothing if there is none (not staged, or not yet).
// Throws Error if it exists but cannot be parsed.
std::optional<ReadyMarker> read_ready_marker(const std::string& marker_path);

// The marker in a parsed record; throws Error naming marker_path if it has
// no path, or bytes or files that are not counts.
ReadyMarker ready_marker_of(const toml::table& record, const std::string& marker_path);

}  // namespace dlstage
