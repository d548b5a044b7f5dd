// What every policy answers: may it, and why (one line).  A refusal's
// reason is what the user or admin reads; an allowance may say why too
// (a relaunch is announced in the job output).
//
// policies/ holds one file per question, each a pure function from facts
// (plain structs of numbers and names, gathered by the caller: no file
// system, no Slurm) to a Verdict, unit-tested with plain numbers:
// tier_choice, staging_mode, admission, cleanup, node_faults (a Blame
// instead of a yes or no), unsquashfs, launch_retry, purge, shared_copy,
// cache_eviction (a plan: which node cache entries go), overrides (the
// effective tier for a job), gc, split_placement.  Rules still to come belong beside them
// in the same shape.
#pragma once

#include <string>
#include <utility>

#include "lib/error.hpp"

namespace dlstage::policy {

struct Verdict {
    bool allowed = true;
    std::string reason;  // one line; always set when refused

    static Verdict allow(std::string why = "") { return {true, std::move(why)}; }
    static Verdict refuse(std::string why) { return {false, std::move(why)}; }
};

// For callers that stop at a refusal: throws Error with its reason.
inline void require(const Verdict& verdict)
{
    if (!verdict.allowed)
        throw Error(verdict.reason);
}

}  // namespace dlstage::policy
