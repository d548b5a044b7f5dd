// Finding what can be known about a dataset's source cheaply (the facts
// are facts/source_facts): one stat, or a glob of tar shards.  Never a
// walk of a tree on the parallel file system: the bytes and files of a
// directory come from its manifest (`dlstage catalog scan`) when there is a
// trusted one that is current at the root, read no further than its
// header; else they stay unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "facts/config_model.hpp"
#include "facts/source_facts.hpp"

namespace dlstage {

// manifest_dir: site.manifest_dir, where a catalog dataset's manifest may be.
SourceFacts probe_source(const Dataset& dataset, const std::string& manifest_dir = "");

// A reach = "mover" dataset's source as submit knows it without looking
// (the compute side, and perhaps this host, cannot see it): present, of
// the format its name says, and of the size its manifest's header says
// when there is a trusted one (with the manifest's scan time); size
// unknown otherwise.  The mover job finds what is really there.
SourceFacts probe_far_source(const Dataset& dataset, const std::string& manifest_dir);

// When a source last changed, as a few stats tell (gc asks, as the
// entry's user, whether a node cache entry is still worth a job's
// preference: policies/node_features entry_attracts): the newest ctime of
// the source file, of each shard of a glob and their directories, or of a
// tree's root; and a tree's manifest's scan time (0: none).  Never a walk.
struct SourceTimes {
    bool present = false;  // it is there and readable
    std::int64_t newest_ctime = 0;
    std::int64_t manifest_scanned = 0;
};
SourceTimes source_times(const Dataset& dataset, const std::string& manifest_dir);

// The files a glob of tar shards matches, sorted bytewise: the order they
// are staged in.  err: why the glob failed (no match is not a failure).
struct ShardMatches {
    std::vector<std::string> paths;
    int err = 0;

    // The directories the shards sit in, and how many.
    std::set<std::string> directory_paths() const;
    std::size_t directories() const;
};
ShardMatches match_shards(const std::string& pattern);

}  // namespace dlstage
