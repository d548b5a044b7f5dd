// job_prolog / job_epilog context: slurmd runs these as root, once per node
// of the job (PrologFlags=Alloc), each in a fresh process.
//
// Root code here never reads dataset content: it resolves the request,
// prepares per-job directories and writes state records.  A problem the
// user caused must never drain the node, so user problems are recorded and
// the callback still succeeds.
#pragma once

#include "spank/plugin_args.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// Always 0 for requests that are merely wrong; -1 only for a broken node.
int job_prolog(SpankApi& api, const PluginArgs& args);

}  // namespace dlstage::spank
