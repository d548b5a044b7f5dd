// Split staging (a dataset larger than one node's tier, --stage-data=
// NAME:TIER:split): the plan's parts placed over the job's nodes by
// policies/split_placement, this node's share of the plan, and the index
// every node gets beside the data (DLSTAGE_<NAME>_INDEX).  The parts are
// the plan's files and symlinks in plan order: a shard set's shards, a
// tree's files; directories go to every node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "config/stage_spec.hpp"
#include "facts/tier_space.hpp"
#include "policies/split_placement.hpp"
#include "stager/plan/plan.hpp"

namespace dlstage::stager {

struct SplitLayout {
    std::size_t nodes = 1;
    std::vector<std::size_t> part_entry;  // the plan entry of each part
    std::vector<std::uint64_t> part_bytes;
    std::vector<std::size_t> node_of;        // of each part: its node in the job's order (the rank)
    std::vector<std::uint64_t> share_bytes;  // of each node
    std::vector<std::uint64_t> share_files;  // of each node: its parts
};

// Where each part of the plan goes on `nodes` nodes (every rank computes
// the same from the same plan).
SplitLayout place_plan(const Plan& plan, std::size_t nodes);
// The same for the item's plan, which must have parts: a plan of one file
// (a catalog changed since submit) throws split_possible's refusal.
SplitLayout place_for(const StageItem& item, const Plan& plan, std::size_t nodes);

// The plan cut down to node's parts and every directory.
Plan share_of(const Plan& plan, const SplitLayout& split, std::size_t node);

// The index as JSON: dataset, tier, placement, nodes, this node, its bytes
// and files, each node's share (with its host) and, for tar shards and
// image sets, every part with its node and bytes (a tree's files are not listed: each node
// walks its own part).
toml::table split_index(const StageItem& item, const Plan& plan, const SplitLayout& split, std::size_t node,
                        const std::vector<std::string>& hosts);
std::string split_index_json(const StageItem& item, const Plan& plan, const SplitLayout& split, std::size_t node,
                             const std::vector<std::string>& hosts);

// What a node weighs to say, when it refuses the item whole for want of
// room, on how many nodes it would fit split (policy::with_split_advice,
// the advice submit gives): the room of this node's tier (its max_bytes, or
// what is free if less, standing for every node's), and the dataset's
// bytes: a shard set's parts, a tree's total taken as files small enough
// to share evenly.  bytes_before: what a tree walked in segments brought
// before this plan (walk_goes_on: and more may follow, so the total is the
// least it needs).
policy::SplitFacts split_facts_here(const StageItem& item, const Plan& plan, const TierSpace& space,
                                    std::uint64_t bytes_before = 0, bool walk_goes_on = false);

// "split over 3 nodes, 1.2-1.3 GiB each": for the job's lines.
std::string shares_text(const SplitLayout& split);

}  // namespace dlstage::stager
