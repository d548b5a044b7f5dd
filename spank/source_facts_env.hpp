// Submit-time source facts, carried to the prolog in the job's control
// environment (spank_job_control_setenv -> SPANK_DLSTAGE_FACTS), because
// root code must not stat user-named sources itself: that would reveal the
// size of files the user cannot read.  The user can only lie about their
// own job, which then fails for lack of space: no harm to the node.
#pragma once

#include <map>
#include <string>

#include "dataset/source_probe.hpp"
#include "lib/contract.hpp"  // kFactsVar

namespace dlstage::spank {

// "name=bytes/files;..." with "-" for unknown.
std::string encode_facts(const std::map<std::string, SourceFacts>& facts);
std::map<std::string, SourceFacts> decode_facts(const std::string& text);  // ignores malformed parts

}  // namespace dlstage::spank
