// A copy in a shared tier that an earlier attempt began and did not finish
// (its job reached its time limit, was requeued or cancelled, lost its
// node): the next attempt goes on from what .partial-NAME holds instead of
// reading the whole source again, when policies/shared_copy (may_resume)
// says each file there can be told whole or cut off.  A file is whole when
// its size and mtime are the source's: the writer sets the mtime after the
// file's last byte (stager/transfer/tree_writer), so a file cut off mid-way keeps
// the time it was written at; of such a file the prefix its logged pieces
// vouch for is kept (stager/copies/piece_log).  The record of what the partial copy copies
// is .resume-NAME.toml (job/copy_record.hpp), written before the first
// byte and removed once the copy is published.
#pragma once

#include <cstdint>
#include <string>

#include "config/stage_spec.hpp"
#include "job/job_layout.hpp"
#include "lib/sys/fd.hpp"
#include "stager/plan/plan.hpp"
#include "stager/steps/node_context.hpp"
#include "stager/steps/stage_steps.hpp"

namespace dlstage::stager {

struct Unfinished {
    bool resumed = false;        // every rank: going on from a partial copy
    Plan rest;                   // every rank, when resumed: the directories and what is still to write
    HeldAlready held;            // when resumed: what the partial copy holds (whole files, and prefixes)
    std::uint64_t attempts = 1;  // rank 0, and every rank when resumed: this attempt's number
    std::int64_t began = 0;      // rank 0: when the first attempt began (0: this one)
    std::string began_by;        // rank 0: its job
    std::string why;             // rank 0: the reason it is gone on from or staged whole ("": nothing there)
};

// Collective.  Rank 0 looks for a partial copy and its record; when the
// policy allows, every rank checks its share of the plan against it (stat)
// and removes what was cut off or added.  Else nothing is touched: the
// caller clears the partial copy.
Unfinished look_for_unfinished(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                               const Plan& plan, const std::string& identity, const NodeContext& ctx);

// Rank 0, before the first byte: the record of what the partial copy is
// a copy of, for the next attempt (only where one may go on from it:
// policy::copy_refreshable).
void record_unfinished(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                       const Unfinished& found, const std::string& identity, const NodeContext& ctx);

// Rank 0, before the first byte of a copy staged while its source is
// walked (stager/steps/segment_transfer): a record with no identity yet, and an
// empty walked list (.walked-NAME) that note_walked extends by each
// segment once its directories are in the partial copy, before its files'
// bytes (each then told whole or cut off as any).  The next attempt compares the
// list with its plan entry by entry (the identity is of the whole plan).
void record_walking(const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir,
                    const NodeContext& ctx);
void note_walked(const DatasetLayout& layout, const DatasetLayout& here, const Fd& job_dir, const Plan& segment);

// Rank 0, once the copy is published: the record (and walked list) goes.
void forget_unfinished(const DatasetLayout& here, const Fd& job_dir);

}  // namespace dlstage::stager
