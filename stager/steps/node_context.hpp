// Where one rank of the stager works and with whom: the communicator of the
// ranks that take part, this node, the job's values and the site's places.
// Every step of staging takes it (stager/steps/collectives, stager/steps/stage_steps).
#pragma once

#include <cstdint>
#include <mpi.h>
#include <string>
#include <vector>

#include "facts/path_template.hpp"

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
    std::string manifest_dir;        // site.manifest_dir: rank 0 plans from a dataset's manifest there
    double progress_interval = 5.0;  // seconds between progress lines (rank 0)
    // Says nothing, writes no progress record: a node moving its own share
    // of a split dataset alone (comm MPI_COMM_SELF); the job's rank 0 speaks.
    bool quiet = false;
    // Rank 0 moving its share of a split dataset: the whole's bytes and
    // files and every node's share, so that its progress speaks for the
    // job (its own share scaled up).  No shares: not split.
    struct SplitProgress {
        std::uint64_t bytes = 0, files = 0;
        std::vector<std::uint64_t> shares;
    };
    SplitProgress split;
    // The job's nodes when comm holds fewer (a split dataset's node moving
    // its share alone); 0: size.  Rules that weigh the job's width (each
    // rank listing directories) count these.
    int job_nodes = 0;
};

// The context of the ranks of `part`, a communicator split from ctx.comm:
// the nodes that take part in a transfer (a node cache's that missed), or
// a split dataset's node moving its share alone (split: the whole's
// figures; MPI_COMM_SELF, or a part of one node).  Such a node says
// nothing unless it is the job's rank 0, whose progress speaks for the
// job (its own share scaled up by `split`).
NodeContext part_of(const NodeContext& ctx, MPI_Comm part, const NodeContext::SplitProgress* split = nullptr);

}  // namespace dlstage::stager
