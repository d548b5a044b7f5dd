#include "stager/steps/node_context.hpp"

namespace dlstage::stager {

NodeContext part_of(const NodeContext& ctx, MPI_Comm part, const NodeContext::SplitProgress* split)
{
    NodeContext within = ctx;
    within.comm = part;
    MPI_Comm_rank(part, &within.rank);
    MPI_Comm_size(part, &within.size);
    if (split) {
        within.quiet = ctx.rank != 0;
        within.job_nodes = ctx.size;
        if (ctx.rank == 0)
            within.split = *split;
    }
    return within;
}

}  // namespace dlstage::stager
