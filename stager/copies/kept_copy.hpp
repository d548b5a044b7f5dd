// What a kept copy (a shared tier's, stager/tiers/shared_tier; a node cache's
// entry, stager/tiers/cache_tier) goes through once it is staged: put in place
// (the old one aside and away), listed, recorded, and each use counted.
// Names relative to the directory the copy lives in (here), paths for
// messages (layout).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/stage_spec.hpp"
#include "job/copy_record.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/copies/copy_lock.hpp"
#include "stager/plan/plan.hpp"
#include "stager/steps/node_context.hpp"

namespace dlstage::stager {

// A kept copy's contents file (stager/copies/copy_check), broadcast from rank 0;
// nothing on every rank when rank 0 could not read or parse it.
std::optional<Plan> read_contents_once(const std::string& path, const NodeContext& ctx);

// A kept copy checked against its list of contents by every rank, each its
// share (check_copy, find_added), with the totals over all ranks.  A copy
// whose directory is gone has every entry missing; one whose directory is
// not the user's counts one foreign entry more.  share's rank and ranks
// are ctx's.
struct KeptCopyCheck {
    bool present = false;            // its directory opened
    CopyCheck mine;                  // this rank's share
    std::vector<std::string> added;  // this rank's share of names no job of dlstage wrote
    std::uint64_t missing = 0, wrong_size = 0, changed = 0, added_total = 0, foreign = 0;
    std::int64_t oldest = 0;  // min over ranks of CopyCheck::oldest
};
KeptCopyCheck check_kept_copy(const std::string& dir, const Plan& contents, CheckShare share, const NodeContext& ctx);
// Collective: a new copy at to_dir (made, empty) of what the copy at
// from_dir holds of `contents`, by hard links: its directories (rank 0,
// modes writable until stager/transfer/tree_writer's set_dir_modes), then each rank its share of files
// and symlinks (i % size == rank, as check_copy shares them), those in
// `skip` (this rank's bad entries, sorted) left out; a file gone since it
// was checked (the purge) is fetched (keep_times: with its source mtime).
// Costs a link per file, no data; the copy at from_dir is not changed.
// Throws Error.
void link_copy(const std::string& from_dir, const std::string& to_dir, const std::string& shown, const Plan& contents,
               const std::vector<std::size_t>& skip, bool keep_times, const NodeContext& ctx);
// Where a record says a copy at layout.dataset_dir is: the directory, or
// the one file a single-file dataset's job sees.
std::string ready_path(const StageItem& item, const DatasetLayout& layout, const Plan& plan);

// Removes the entry `name` (relative to the directory open as copy; shown:
// that directory, for messages) whatever it is, a tree too.  Throws Error.
void remove_copy_entry(int copy, const std::string& name, const std::string& shown);

// Rank 0: the lock on a copy (`name` in the directory open as dir_fd,
// `shown` its path), as this job's rank, waiting for a live holder and
// saying who it waits for.  Released when it goes.
std::unique_ptr<CopyLock> take_copy_lock(const StageItem& item, const NodeContext& ctx, int dir_fd,
                                         const std::string& name, const std::string& shown);

// Seconds since the epoch, as records keep times.
std::int64_t seconds_now();

// The new copy (here.partial_dir) into place, the old one aside and away.
void publish_copy(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& dir,
                  const NodeContext& ctx);

// What an unpacked copy holds: what extraction wrote.
Plan unpacked_contents(const StageItem& item, const DatasetLayout& layout);

// The record of a copy just made from plan, holding contents.
CopyRecord new_record(const StageItem& item, const DatasetLayout& layout, const Plan& plan, const Plan& contents,
                      const std::string& identity, const NodeContext& ctx);

// One more use of the copy, written to its record (here.ready_marker).
void record_use(CopyRecord& record, const DatasetLayout& here, const NodeContext& ctx, std::int64_t oldest);

// The job's own record of what happened, for `dlstage status`.
void record_job_state(const StageItem& item, const CopyRecord& record, const NodeContext& ctx, const char* state);

// What a failed or interrupted staging left; the copy itself stays until
// the new one replaces it.
void clear_partial(const DatasetLayout& layout, const DatasetLayout& here, const Fd& dir);

}  // namespace dlstage::stager
