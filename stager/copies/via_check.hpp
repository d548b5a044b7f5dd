// Two-hop staging's second part reads the copy a mover job made in the
// dataset's via tier (or, in that tier, uses it as it is).  The compute
// nodes cannot compare that copy with the source, which they cannot see;
// they compare it with what the mover recorded it holds (its contents
// file), by stat, each rank its share.  A copy that differs (an entry
// missing, resized, written to in place, added, someone else's) is not used:
// the job stops, saying so, and the copy's record says so (found_changed),
// so that the next submission submits a mover job, which repairs it from
// the source, fetching only what differs (a copy that lost its list of
// contents loses its record and is made again).
#pragma once

#include "config/stage_spec.hpp"
#include "stager/steps/node_context.hpp"

namespace dlstage::stager {

// Every rank; returns when the item is not two-hop or its copy is whole.
// Throws Error naming what differs otherwise.  `named`: the copy the
// record names (stager/copies/copy_readers: copy_in_record), "" for its own name.
void check_via_copy(const StageItem& item, const NodeContext& ctx, const std::string& named);

// Every rank.  Two-hop: under the via copy's lock (a mover job at work on
// it is waited for), the copy its record names is checked as above, the
// job leaves its mark as a reader of it (stager/copies/copy_readers: no later
// mover job changes it while the job runs), and the item returned reads
// that copy (a mover job may have made a new one since the job was
// planned).  Any other item comes back as it is.
StageItem hold_via_copy(const StageItem& item, const NodeContext& ctx);

}  // namespace dlstage::stager
