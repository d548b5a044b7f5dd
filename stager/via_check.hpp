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
#include "stager/node_context.hpp"

namespace dlstage::stager {

// Every rank; returns when the item is not two-hop or its copy is whole.
// Throws Error naming what differs otherwise.
void check_via_copy(const StageItem& item, const NodeContext& ctx);

}  // namespace dlstage::stager
