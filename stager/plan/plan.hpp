// The plan of one staging: every entry to create on the nodes, in a fixed
// order all ranks share.  Rank 0 builds it, from the dataset's manifest
// when one is trusted and current, else with one walk of the source (the
// only metadata load on the parallel file system), and broadcasts it.
//
// A plan of 1.28 M files must fit every rank many times over: its entries
// are an EntryList (dataset/entry_list: 40 bytes and the path per entry), and
// its wire format is that list's two blocks as they lie in memory, so
// broadcast_plan sends and receives them in place, without a serialized
// copy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "config/config.hpp"
#include "dataset/entry_list.hpp"

namespace dlstage::stager {

using dlstage::Entry;
using dlstage::EntryType;

// Bytes at the start of a file that an unfinished copy holds already,
// checked against what its writer logged (stager/copies/piece_log): the
// file is written from there on.
struct HeldPrefix {
    std::uint32_t entry = 0;  // index into Plan::entries (a file)
    std::uint64_t bytes = 0;  // less than the file's size
};

struct Plan {
    std::string source_root;            // where entry paths are read from
    Format format = Format::Auto;       // File, Dir, Tar or Squashfs
    bool single_file = false;           // the job sees the one file, not the directory
    EntryList entries;                  // directories before their contents
    bool from_manifest = false;         // rank 0 only: planned from a manifest, not a walk
    std::int64_t manifest_scanned = 0;  // rank 0 only: that manifest's scan time
    // Every rank, in a plan of what is still to write (plan_part): files
    // held in part already, sorted by entry.  Not sent with the plan.
    std::vector<HeldPrefix> held_prefixes;

    std::uint64_t total_bytes() const { return entries.total_file_bytes(); }
    std::uint64_t bytes_to_write() const;                                 // total_bytes() less the held prefixes
    std::uint64_t file_count() const { return entries.non_dir_count(); }  // files and symlinks
    std::uint64_t entry_count() const { return entries.size(); }
};

// Adds an entry a walk found (its path relative to the root, its lstat,
// a symlink's target) to a plan's list.
void add_walked(EntryList& entries, std::string_view rel, const struct stat& st, std::string_view target);

// Called for each directory the walk meets, with its lstat (manifests keep
// directories' ctimes).  May be called from several threads at once.
using DirSeen = std::function<void(const std::string& path, const struct stat& st)>;

// Walks the source as the calling user (walk_tree, with up to walk_threads
// threads listing directories in parallel: all of them on a source slow to
// stat, as many as the CPUs on one that answers in microseconds).  Throws
// Error naming what cannot be read (a file by its mode; one only an ACL or a security module keeps
// from this user fails when it is read); special files (devices, fifos,
// sockets) are refused.
Plan build_plan(const Dataset& dataset, unsigned walk_threads = 16, const DirSeen& dir_seen = nullptr);

// The plan from the dataset's manifest in manifest_dir when it is trusted
// and current (dataset/manifest: every directory's mtime and ctime as scanned),
// else from build_plan.  note: why a manifest there was not used, one line
// for the job's output ("" when it was used or there is none).
Plan plan_for(const std::string& manifest_dir, const Dataset& dataset, std::string& note, unsigned walk_threads = 16);

// The plan cut down to its directories and the entries marked in `wanted`
// (one flag per entry), in the same order: what is still to be written
// into a tree that holds the rest (an unfinished copy gone on from).
// held: prefixes of wanted files the tree holds (indices into `plan`,
// sorted), renumbered into the part's held_prefixes.
Plan plan_part(const Plan& plan, const std::vector<char>& wanted, const std::vector<HeldPrefix>& held = {});

// --- wire format ---------------------------------------------------------------
// A header (magic and version, the plan's fields, the sizes of the blocks),
// then the entry records and the path arena as they lie in memory: both ends
// are the same binary.
std::string wire_header(const Plan& plan);
// A plan with its blocks sized from a header (throws Error on a malformed
// or foreign one), for the blocks to be received into; then adopt_blocks().
struct PlanReceiver {
    Plan plan;
    std::vector<EntryList::Record> records;
    std::string arena;
    void adopt_blocks();  // checks the blocks and moves them into plan.entries
};
PlanReceiver receive_header(const std::string& header);

// The whole plan as one string and back (tests, and anything with no room
// to send blocks).
std::string serialize(const Plan& plan);
Plan deserialize(const std::string& bytes);  // throws Error on malformed input
// Hex digest of everything the plan says about the source: equal
// identities mean no file was added, removed, resized or touched.
std::string source_identity(const Plan& plan);
// The same, of a plan already serialized (serialize(plan)).
std::string source_identity_of(const std::string& serialized_plan);

// Plans serialized one after another (a walk's segments as they were
// staged): one plan of all their entries, sorted by path, with the first
// one's fields.  A malformed plan ends it: what comes before it counts (an
// append cut off mid-way leaves a partial one at the end).
Plan deserialize_segments(const std::string& bytes);

}  // namespace dlstage::stager
