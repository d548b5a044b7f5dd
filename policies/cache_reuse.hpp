// Whether a node cache entry may be used by a job instead of a transfer
// (a cache hit): facts in, verdict out, the reason for a miss in one line
// for the job output.  The stager gathers the facts on each node, in this
// order, and stops at the first that fails (stager/tiers/cache_tier, look_here).
#pragma once

#include <cstdint>
#include <string>

#include "policies/verdict.hpp"

namespace dlstage::policy {

// (Not CacheEntryFacts: that is cache_eviction's type; one name, one type.)
struct CacheHitFacts {
    bool has_record = false;     // .ready-NAME.toml there and readable
    std::string record_problem;  // ... or why it could not be read
    bool same_source = false;    // its source identity and mode are the plan's
    bool sealed = false;         // it has a seal (the directory's ctime when complete)
    bool listed = false;         // its list of contents could be read (copy mode: the plan)
    bool present = false;        // its directory is there
    bool yours = false;          // ... and the job's user's
    bool top_unchanged = false;  // no name added to, removed from or renamed in it since the seal
    // The check of every entry by stat (stager/copies/copy_check): missing or of
    // another type (foreign: someone else's, counted in missing too),
    // changed since the seal, of another size (changed counted in it too).
    std::uint64_t missing = 0, foreign = 0, changed = 0, wrong_size = 0;
};

// Allowed: a hit.  Refused: the reason it is staged again on this node.
Verdict cache_entry_usable(const CacheHitFacts& facts);

}  // namespace dlstage::policy
