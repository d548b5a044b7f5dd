// The kept copies of a dataset in the shared tiers, as `dlstage status
// --dataset` finds them: the user's own, or as root every user's, each
// user directory looked into as root code looks into any tier (no symlink
// followed, no mount entered, no fifo waited on) and each record believed
// only from its directory's owner.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "job/copy_record.hpp"

namespace dlstage {

// The copies of a dataset in the shared tiers that keep copies: the given
// user's, or with all_users (root) every user directory's below the tier
// root.  A record that cannot be read is listed with its problem.
struct FoundCopy {
    std::string tier;
    std::string user;
    std::string record_path;
    std::optional<CopyRecord> record;
    std::string problem;
};
std::vector<FoundCopy> find_copies(const Config& config, const std::string& dataset, const std::string& user,
                                   bool all_users);

}  // namespace dlstage
