// Split staging (a dataset larger than one node's tier): which node holds
// which shard, and whether a dataset fits a tier split over a job's nodes.
// Pure: the caller gives the shards' sizes (in the dataset's order) and
// the tier's room per node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// Whether a dataset can be split in a tier at all: only into a node tier
// (a shared tier holds one copy every node reads), never an image to mount
// (mounted whole), and only a dataset of several parts: tar shards or
// squashfs images (a glob: by part) or a directory (by file).  format: what is known of the source
// (the dataset's known_format(), or what a look at it found).
Verdict split_possible(const Dataset& dataset, const Tier& tier, Format format);

// Whether an entry of --stage-data is split: as it asks (NAME:TIER:split or
// :whole); else never into a shared tier or for an image to mount; else as
// the dataset says (placement = "split"), else as the tier says for a
// dataset its name or catalog entry shows to be of several parts (tar
// shards or format = "dir").
bool placed_split(const std::optional<Placement>& asked, const Dataset& dataset, const Tier& tier);

// The node (index into the job's node order) of each shard.  Shard i goes
// to node i mod N, the order WebDataset's split_by_node hands shards out
// in, when that is balanced within one shard: no node holds more than the
// least loaded one plus the largest shard.  Otherwise (sizes differ
// much) the largest shard goes first, each to the node holding the fewest
// bytes so far (the lower node on a tie), which always is.  nodes > 0.
std::vector<std::size_t> place_shards(const std::vector<std::uint64_t>& sizes, std::size_t nodes);

// The bytes each node holds under a placement.
std::vector<std::uint64_t> node_shares(const std::vector<std::uint64_t>& sizes,
                                       const std::vector<std::size_t>& placement, std::size_t nodes);

// The fewest nodes whose shares (place_shards) each fit in `room` bytes;
// nothing when no number of nodes does (a shard alone is larger).
std::optional<std::size_t> fewest_nodes_split(const std::vector<std::uint64_t>& sizes, std::uint64_t room);

// Whether a dataset may be staged to a tier on a job's nodes, whole on
// each or split.  room: what one node's tier takes (its max_bytes, or
// what is free); nothing when not known here (the node checks again).
struct SplitFacts {
    std::string dataset, tier;
    std::string asked_as;                    // how --stage-data names it (Dataset::requested_as); "": dataset
    std::vector<std::uint64_t> shard_sizes;  // the dataset's parts (a tree: its files)
    // With no part sizes (a tree, its files unknown here): its bytes, taken
    // as parts small enough to share evenly.
    std::optional<std::uint64_t> total;
    // A tree walked while it moves, refused part-way: total is what the
    // walk found before the refusal, the least it needs.
    bool total_so_far = false;
    std::optional<std::uint64_t> room;
    std::size_t nodes = 1;     // the job's (0: not known here; the node checks)
    bool split_asked = false;  // --stage-data=NAME:TIER:split, or placement = "split"
};
// Refused, in one line: split asked but the job has too few nodes (with how
// many it takes); not asked but it fits only split (with the request that
// would do, and on how many nodes); a part larger than a node's room
// (it fits nowhere, naming the sizes).
Verdict admit_placement(const SplitFacts& facts);

// "it would fit split on 3 or more nodes: --stage-data=in21k:shm:split with
// -N 3 or more", when a split on 2 or more nodes fits the room; else "".
// With total_so_far it adds that the rest of the tree may need more.
std::string split_advice(const SplitFacts& facts);

// A refusal of the dataset whole (policies/admission) with that advice
// after it, where a split may be asked for: not asked already
// (facts.split_asked) and possible into the tier (split_possible: a node
// tier, a dataset of several parts).  One rule for submit and for a node
// at job start, where a tree with no manifest is first sized.
Verdict with_split_advice(const Verdict& whole, const Dataset& dataset, const Tier& tier, Format format,
                          const SplitFacts& facts);

// The most bytes any node holds when the dataset is split over `nodes`
// (the facts' parts placed, or their total shared evenly); nothing when
// neither is known.
std::optional<std::uint64_t> largest_share(const SplitFacts& facts, std::size_t nodes);

// Whether a node cache may keep a split dataset's shares as the stager
// writes them: rank R writes share R (NAME.split-R-of-N), and each node's
// prolog records the job's use of the share of its own place in the job's
// node list (slurmd's).  Under a launcher or a distribution that orders
// ranks otherwise, the share a job reads would have no use record and
// could be evicted under it: refused, in one line naming the first rank
// out of place.  node_of_rank: each rank's node; job_nodes: the job's node
// list expanded (nothing: unknown).
Verdict split_shares_in_node_order(const std::vector<std::string>& node_of_rank,
                                   const std::optional<std::vector<std::string>>& job_nodes);

}  // namespace dlstage::policy
