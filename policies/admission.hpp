// May this dataset be staged to this tier?  A pure decision over facts that
// the caller gathers: on the submit side the source facts alone, on a node
// also the tier's file system (statvfs).  No I/O here, so every rule is
// unit-tested with plain numbers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "facts/config_model.hpp"
#include "facts/source_facts.hpp"
#include "facts/stage_item.hpp"
#include "facts/tier_space.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// The tier's file system on a node (tier/tier_measure.hpp); empty on the
// submit side.
using dlstage::TierSpace;

// Can this version stage the dataset to the tier at all?  (Mount mode on a
// shared tier is refused up front, on the submit side, rather than failing
// a running job.)
Verdict supported(const Dataset& dataset, const Tier& tier);

// Checks the tier's max_bytes and max_inodes (a percentage only when the
// file system is known) and, when known, the free bytes and inodes.
// Unknown sizes pass: the node checks again once it knows more.
Verdict admit(const Dataset& dataset, const Tier& tier, const SourceFacts& facts, const TierSpace& space);

// One bound on what extracting a dataset's archives writes into a tier, and
// the words for passing it.
struct ExtractionLimit {
    std::optional<std::uint64_t> most;  // nothing: no limit is known here
    std::string words;                  // "dataset 'x' expands to more than 80.0 MiB in tier 'shm' (max_bytes = ...)"
    std::string advice;                 // what to do about it

    // One line: words, "while extracting ARCHIVE", advice.
    std::string reason(const std::string& archive) const;
};

// How much extracting may write: file bytes (logical sizes: a sparse file
// counts its size) and entries.  Each is the tighter of the tier's own limit
// (max_bytes, max_inodes) and what is free on the node once the archives,
// which stay until extraction ends, are in the tier (space measured before
// they arrived; the archives' sizes and entries in `archives`).
struct ExtractionBudget {
    ExtractionLimit bytes;
    ExtractionLimit entries;
};

ExtractionBudget extraction_budget(const Dataset& dataset, const Tier& tier, const SourceFacts& archives,
                                   const TierSpace& space);

// The part of a budget one of several unpackers may write when each unpacks
// some of the archives into one shared copy: each limit in proportion to
// the bytes of its archives (part of total), rounded up.  An unpacker that
// needs more than its part does not fail: the archives are unpacked again
// by one, with the whole budget, so no limit is ever passed in all and no
// dataset that fits is refused.
ExtractionBudget extraction_share(const ExtractionBudget& whole, std::uint64_t part, std::uint64_t total);

// The job's memory on each node, when known where the question is asked
// (job/job_identity gathers it), and how the job asked for it, for the
// message ("--mem=64G per node").
struct JobMemory {
    std::optional<std::uint64_t> per_node;  // bytes
    std::string asked;
};

// Do the datasets the job stages to tiers that charge memory
// (Tier::charges_memory: tmpfs pages count against the job's memory cgroup)
// fit in the job's memory on a node?  Sizes come from facts (by dataset
// name); unknown sizes and unknown memory pass: the node checks again.  The
// refusal names the datasets, their sizes, the memory asked for, and the
// fix (a --mem that fits, or a tier of the dataset that charges nothing).
Verdict fits_in_memory(const Config& config, const std::vector<StageItem>& items,
                       const std::map<std::string, SourceFacts>& facts, const JobMemory& memory);

}  // namespace dlstage::policy
