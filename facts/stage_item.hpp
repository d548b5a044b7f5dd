// One entry of --stage-data as written, and as resolved against the
// catalog (config/stage_spec parses and resolves them): what the admission
// rules count per job.
#pragma once

#include <string>

#include "facts/config_model.hpp"

namespace dlstage {

struct StageRequest {
    std::string text;  // the entry as written, for messages
    std::string name;  // catalog name, or the absolute path
    std::string tier;  // empty: the default tier
    bool is_path = false;
};

struct StageItem {
    Dataset dataset;  // from the catalog, or made up for a path
    Tier tier;
    std::string env_name;  // DLSTAGE_<NAME>
};

}  // namespace dlstage
