// Staging one dataset to one tier on every node of the job (one rank per
// node), from the check that the prolog prepared the node to the ready
// marker written last.
#pragma once

#include <mpi.h>
#include <string>

#include "config/stage_spec.hpp"
#include "stager/exchange.hpp"

namespace dlstage::stager {

struct NodeContext {
    // The ranks that take part: every node of the job, or (node caches)
    // those that missed; rank and size are within comm.
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0;
    int size = 1;
    std::string node;
    TemplateValues values;  // job id, user, node
    std::string state_dir;
    std::string manifest_dir;  // site.manifest_dir: rank 0 plans from a dataset's manifest there
    double progress_interval = 5.0;  // seconds between progress lines (rank 0)
};

// Throws Error with the reason (the caller adds dataset, tier and node).
void stage_dataset(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options);

}  // namespace dlstage::stager
