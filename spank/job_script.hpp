// job_prolog / job_epilog context: slurmd runs these as root, once per node
// of the job (PrologFlags=Alloc), each in a fresh process.
//
// Root code here never reads dataset content: it resolves the request,
// prepares and removes per-job directories (never following a symlink,
// never leaving the tier root) and writes state records.  A problem the
// user caused must never drain the node: it is recorded, the stager reports
// it and the job fails.  Only a broken tier (its root missing or not a
// directory) drains the node, because no job could stage there.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// 0, or -1 for a broken tier (slurmd drains the node).
int job_prolog(SpankApi& api, const PluginArgs& args);

// Removes the job's data from tiers with cleanup = "job-end".  Idempotent;
// trouble is logged and recorded, never a drain.
int job_epilog(SpankApi& api, const PluginArgs& args);

}  // namespace dlstage::spank
