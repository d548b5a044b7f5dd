// Staging to a node cache (a node tier with cleanup = "cache"): each node
// keeps the user's copy of a dataset in the user's cache directory
// (job/job_layout.hpp), and a later job of that user on the node uses it
// without any transfer.
//
//   1. every rank takes the dataset's lock in its node's cache directory;
//      the job holds the locks of all its nodes or none (CopyLock::try_take)
//      and tries again, so two jobs on the same nodes never wait for each
//      other;
//   2. rank 0 plans (walk or manifest); every rank looks at its own
//      node's entry: its record says the source's identity then, and every
//      entry of the copy is checked by stat: there, of its size, the user's,
//      and not changed since the copy was sealed (ctime: no user can set it
//      back), so nothing a job did to its copy reaches the next job;
//   3. the ranks split: the nodes that hit use their copy ("cache hit"),
//      the nodes that missed stage it together, reading the source once
//      (the ring among them alone), into .partial-NAME, renamed into place;
//   4. every node writes the job's ready marker in the job directory, its
//      path the entry, and the entry's record counts the use.
// Which entries go when the tier fills up is root's business (the prolog
// and dlstage gc, policies/cache_eviction); an entry a running job uses is
// never evicted.
#pragma once

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/transfer/exchange.hpp"

namespace dlstage::stager {

// layout: the job's (the job directory, open as job_dir and the working
// directory, where the job's marker goes).
void stage_cached(const StageItem& item, const NodeContext& ctx, const ExchangeOptions& options,
                  const DatasetLayout& layout, const Fd& job_dir);

}  // namespace dlstage::stager
