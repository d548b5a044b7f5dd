// Finding what can be known about a dataset's source cheaply (the facts
// are facts/source_facts): one stat, or a glob of tar shards.  Never a
// walk of a tree on the parallel file system: the bytes and files of a
// directory come from its manifest (`dlstage catalog scan`) when there is a
// trusted one that is current at the root, read no further than its
// header; else they stay unknown.
#pragma once

#include <cstdint>
#include <optional>
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

// The files a glob of tar shards matches, sorted bytewise: the order they
// are staged in.  err: why the glob failed (no match is not a failure).
struct ShardMatches {
    std::vector<std::string> paths;
    int err = 0;

    // How many directories the shards sit in.
    std::size_t directories() const;
};
ShardMatches match_shards(const std::string& pattern);

}  // namespace dlstage
