// The extract phase of staging (mode = "extract"): the archives that
// arrived in incoming_dir unpacked into partial_dir, incoming_dir removed.
// On one node by one rank (unpack_here: a node tier's every rank, each its
// own copy), or into one shared copy by every rank, each its own shards
// (unpack_over_ranks).
#pragma once

#include <cstdint>
#include <string>

#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "policies/admission.hpp"
#include "stager/plan/plan.hpp"
#include "stager/steps/node_context.hpp"

namespace dlstage::stager {

struct Unpacked {
    std::uint64_t stripped = 0;  // entries that lost setuid/setgid/sticky bits
    int ranks = 1;               // how many ranks unpacked
};

// layout: relative to the job directory (the working directory); shown:
// that directory's path, for messages.  Throws Error naming the archive
// as the user knows it; partial_dir is removed on any error.
Unpacked unpack_here(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown, const Plan& plan,
                     unsigned threads, const policy::ExtractionBudget& limits);

// Collective over ctx.comm, into a shared tier: rank r unpacks shards r,
// r+N, ... with a share of the budget (policy::extraction_share).  When
// shards overlap, a rank needed more than its share, or any rank failed,
// rank 0 unpacks them all again, in order, with the whole budget: the copy
// is always what `tar -x` of each shard in turn leaves (or fails as it
// fails, naming the archive), and no limit is passed.  A squashfs
// image, or a single archive, is unpacked by rank 0 alone.
Unpacked unpack_over_ranks(const DatasetLayout& layout, const Fd& job_dir, const std::string& shown, const Plan& plan,
                           unsigned threads, const policy::ExtractionBudget& limits, const NodeContext& ctx);

}  // namespace dlstage::stager
