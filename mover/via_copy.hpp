// A user's copy of a reach = "mover" dataset in its via tier, as submit,
// `dlstage prefetch` and status find it: the copy's record (the user's
// own, read as the user), whether the copy is in place, and the purge
// date; policies/two_hop decides whether it serves a job without a mover.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "job/copy_record.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

struct ViaCopy {
    std::string record_path;
    std::optional<CopyRecord> record;
    std::string problem;  // why the record could not be read ("": none, or read)
    policy::ViaCopyFacts facts;
};

// `manifest_scanned`: the scan time of the dataset's manifest now (0: none).
ViaCopy look_at_via_copy(const Config& config, const Dataset& dataset, const std::string& user,
                         std::int64_t manifest_scanned, std::int64_t now);

}  // namespace dlstage::mover
