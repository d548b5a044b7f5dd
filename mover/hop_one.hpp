// Hop 1 of two-hop staging, as a job's submit and `dlstage prefetch` ask
// for it (as the user): the user's copy of a reach = "mover" dataset in its
// via tier serves as it is (policies/two_hop: via_copy_usable), or a mover
// job makes it: the one already queued or running, else a new one.
#pragma once

#include <string>

#include "mover/mover_job.hpp"

namespace dlstage::mover {

struct HopOne {
    bool copy_usable = false;  // nothing to do: no mover job
    std::string why;           // else: why a mover job copies it ("there is no complete copy in scratch yet")
    MoverJob job;              // else: the mover job
};

// Throws Error (one line) when a mover job cannot be found or submitted.
HopOne prepare_copy(const Config& config, const Dataset& dataset, const std::string& user);

}  // namespace dlstage::mover
