#include "dataset/catalog_listing.hpp"

#include <sstream>

#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/text_table.hpp"

namespace dlstage {

std::vector<CatalogRow> catalog_rows(const Config& config)
{
    std::vector<CatalogRow> rows;
    for (const auto& entry : config.datasets)
        rows.push_back({&entry.second, probe_source(entry.second, config.site.manifests())});
    return rows;
}

std::string size_cell(const SourceFacts& facts)
{
    switch (facts.state) {
    case SourceFacts::State::Missing: return "missing";
    case SourceFacts::State::Unreadable: return "unreadable";
    case SourceFacts::State::Unfit: return "unfit";
    case SourceFacts::State::Present: break;
    }
    return facts.bytes ? format_size(*facts.bytes) : "-";
}

std::string files_cell(const SourceFacts& facts)
{
    return facts.files ? std::to_string(*facts.files) : "-";
}

std::string format_cell(const CatalogRow& row)
{
    const Format format = row.facts.state == SourceFacts::State::Present ? row.facts.format
                                                                         : row.dataset->known_format();
    return to_string(format);
}

namespace {
std::string tier_line(const Tier& tier)
{
    std::string line =
        tier.name + ": " + to_string(tier.scope) + ", " + tier.path.text() + ", cleanup " + to_string(tier.cleanup);
    return line;
}
}  // namespace

std::string stage_data_help(const Config& config, const std::vector<CatalogRow>& rows)
{
    std::ostringstream out;
    out << "Datasets for --stage-data=NAME[:TIER][,NAME[:TIER]...] (TIERS: the first is the default):\n";
    std::vector<std::vector<std::string>> cells = {{"NAME", "TIERS", "FORMAT", "MODE", "SIZE", "FILES", "DESCRIPTION"}};
    for (const CatalogRow& row : rows)
        cells.push_back({row.dataset->name, join(row.dataset->tiers, ","), format_cell(row),
                         to_string(row.dataset->mode), size_cell(row.facts), files_cell(row.facts),
                         row.dataset->description});
    if (rows.empty())
        out << "(the catalog is empty)\n";
    else
        print_aligned(out, cells);
    out << "Tiers:\n";
    for (const auto& entry : config.tiers)
        out << "  " << tier_line(entry.second) << "\n";
    if (config.site.allow_paths)
        out << "An absolute path may be staged too: --stage-data=/path/to/data[:TIER].\n";
    out << "More: dlstage catalog list, man spank-dlstage.\n";
    return out.str();
}

}  // namespace dlstage
