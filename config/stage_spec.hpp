// --stage-data=SPEC[,SPEC...], SPEC = NAME[:TIER[:split|whole]]; NAME is a
// catalog name or an absolute path; NAME::split splits into the default tier.  Parsing is syntax only; resolving checks
// the request against the configuration and yields what to stage where.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "facts/stage_item.hpp"

namespace dlstage {

// Throws Error for malformed input: empty value or entry, "a:b:c", bad
// names, relative paths.
std::vector<StageRequest> parse_stage_specs(std::string_view value);

// Throws Error: unknown dataset (with the known ones), unknown tier, and
// duplicates; and what the tier rules refuse (policies/tier_choice.hpp: no
// tier and no default for a path, tier not allowed, paths disabled).
std::vector<StageItem> resolve_stage_requests(const Config& config, const std::vector<StageRequest>& requests);

// parse + resolve.
std::vector<StageItem> resolve_stage_data(const Config& config, std::string_view value);

// The name a path is staged under: its base name without archive or image
// suffixes ("/p/x/cifar10.sqfs" -> "cifar10"; a glob takes its directory's
// name).  Throws Error when no usable name remains.
std::string dataset_name_for_path(const std::string& path);

// The tier directory for this job on this node (the expanded template).
std::string tier_directory(const StageItem& item, const TemplateValues& values);

}  // namespace dlstage
