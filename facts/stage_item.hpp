// One entry of --stage-data as written, and as resolved against the
// catalog (config/stage_spec parses and resolves them): what the admission
// rules count per job.
#pragma once

#include <optional>
#include <string>

#include "facts/config_model.hpp"

namespace dlstage {

struct StageRequest {
    std::string text;  // the entry as written, for messages
    std::string name;  // catalog name, or the absolute path
    std::string tier;  // empty: the default tier
    bool is_path = false;
    // NAME:TIER:split or NAME:TIER:whole; nothing: the dataset's or tier's
    // placement.
    std::optional<Placement> placement;
};

struct StageItem {
    Dataset dataset;  // from the catalog, or made up for a path
    Tier tier;
    std::string env_name;  // DLSTAGE_<NAME>
    // Split over the job's nodes, each node holding its share
    // (policies/split_placement); DLSTAGE_<NAME>_INDEX says who holds what.
    bool split = false;
    // Two-hop staging: a mover job made the copy in this shared tier (the
    // dataset's via); the job's nodes, which cannot see the source, only
    // check that the copy is there (mover/two_hop).
    bool copy_only = false;
    // Two-hop staging, either way: the via tier the mover's copy is in, which
    // the job checks against what the mover recorded it holds
    // (stager/copies/via_check), and whether the mover unpacked it (mode = "extract").
    std::optional<Tier> via = std::nullopt;
    bool via_unpacked = false;
    // ... and the copy's path when the job was planned (its record's): the
    // dataset's source lies there (stager/copies/via_check holds the copy it reads).
    std::string via_path;
};

}  // namespace dlstage
