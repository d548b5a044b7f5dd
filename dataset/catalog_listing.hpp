// The catalog as users see it, for `dlstage catalog list` and the
// plugin's `--stage-data=help`: each dataset with what one stat of its
// source (or its manifest's header) tells, never a walk.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "dataset/source_probe.hpp"

namespace dlstage {

struct CatalogRow {
    const Dataset* dataset = nullptr;
    SourceFacts facts;
};

// Every dataset of config's catalog, by name, probed as the caller.
std::vector<CatalogRow> catalog_rows(const Config& config);

std::string size_cell(const SourceFacts& facts);   // "1.2 GiB", "-", "missing", ...
std::string files_cell(const SourceFacts& facts);  // a count or "-"
std::string format_cell(const CatalogRow& row);    // the format the source has, or the one declared

// The listing `--stage-data=help` prints: a line on the syntax, the
// datasets (name, tiers with the default first, size, files, description),
// then the tiers.
std::string stage_data_help(const Config& config, const std::vector<CatalogRow>& rows);

}  // namespace dlstage
