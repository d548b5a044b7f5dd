// job_prolog / job_epilog context: slurmd runs these as root, once per node
// of the job (PrologFlags=Alloc), each in a fresh process.
//
// Root code here never reads dataset content: it resolves the request,
// prepares and removes per-job directories (never following a symlink,
// never leaving the tier root, never trusting a level a user could write,
// never stat-ing into a mount) and writes state records.  Its work runs in
// a child process bounded by site.prolog_epilog_timeout, so a hung mount
// cannot hold it until Slurm drains the node.  A problem the user caused
// (a full tier, a planted file, a squatted tier root) never drains the
// node: it is repaired or recorded, the stager reports it and the job
// fails.  Only a node fault (the tier's file system missing, read-only or
// failing) drains the node, because no job could stage there.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// 0, or -1 for a node fault (slurmd drains the node).
int job_prolog(SpankApi& api, const PluginArgs& args);

// Removes the job's data from tiers with cleanup = "job-end".  Idempotent;
// trouble is logged and recorded, never a drain.
int job_epilog(SpankApi& api, const PluginArgs& args);

}  // namespace dlstage::spank
