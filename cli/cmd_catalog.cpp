// dlstage catalog list: the datasets users can stage, with what is cheaply
// known of their sources (one stat each; trees are never walked).
#include <algorithm>
#include <iostream>
#include <sstream>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/table.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "dataset/catalog_listing.hpp"
#include "dataset/source_probe.hpp"
#include "lib/error.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage catalog list [--json | --names]\n"
                 "       dlstage catalog scan NAME [--threads N]\n"
                 "       dlstage catalog show NAME [--json]\n"
                 "list: the datasets of the catalog: name, source, format, mode, allowed tiers\n"
                 "(the first is the default), size and files where known.  Sizes come from one\n"
                 "stat of a file, image or tar shards; a directory's size shows as '-'.\n"
                 "scan (admin): walk a dataset's source once, read every file (N readers, 8 by\n"
                 "default) and write its manifest (each entry's type, mode, size, mtime and\n"
                 "xxh3 digest) to site.manifest_dir/NAME.manifest.\n"
                 "show: the manifest's counts, bytes and age, and whether the source changed\n"
                 "since (a walk comparing each entry's type, size and mtime).\n"
                 "\n"
                 "  --json     print JSON instead of a table\n"
                 "  --names    only each dataset's name and tiers, tab-separated, no source looked\n"
                 "             at (for scripts and completion)\n";
}

void print_table(const std::vector<CatalogRow>& rows)
{
    const std::vector<std::string> header = {"NAME", "SOURCE", "FORMAT", "MODE", "TIERS", "SIZE", "FILES"};
    std::vector<std::vector<std::string>> cells = {header};
    for (const CatalogRow& row : rows)
        cells.push_back({row.dataset->name, row.dataset->source, format_cell(row), to_string(row.dataset->mode),
                         join(row.dataset->tiers, ","), size_cell(row.facts), files_cell(row.facts)});
    print_aligned(std::cout, cells);
}

void print_json(const std::vector<CatalogRow>& rows)
{
    toml::array list;
    for (const CatalogRow& row : rows) {
        toml::array tiers;
        for (const auto& tier : row.dataset->tiers)
            tiers.push_back(tier);
        toml::table entry{{"name", row.dataset->name},
                          {"source", row.dataset->source},
                          {"format", format_cell(row)},
                          {"mode", to_string(row.dataset->mode)},
                          {"tiers", std::move(tiers)},
                          {"description", row.dataset->description},
                          {"available", row.facts.state == SourceFacts::State::Present}};
        if (row.facts.bytes)
            entry.insert("bytes", static_cast<std::int64_t>(*row.facts.bytes));
        if (row.facts.files)
            entry.insert("files", static_cast<std::int64_t>(*row.facts.files));
        if (!row.facts.problem.empty())
            entry.insert("problem", row.facts.problem);
        list.push_back(std::move(entry));
    }
    std::cout << toml::json_formatter{list} << "\n";
}
}  // namespace

int cmd_catalog(const GlobalOptions& options, const std::vector<std::string>& args)
{
    if (args.empty())
        return usage_error("catalog needs a subcommand: list, scan or show", "catalog");
    if (std::find(args.begin(), args.end(), "-h") != args.end() ||
        std::find(args.begin(), args.end(), "--help") != args.end()) {
        print_help();
        return kExitOk;
    }
    if (args[0] == "scan" || args[0] == "show")
        return cmd_catalog_manifest(load_config_for_caller(choose_config_path(options.config_path, true)), args);
    if (args[0] != "list")
        return usage_error("unknown catalog subcommand '" + args[0] + "'" +
                               did_you_mean(args[0], {"list", "scan", "show"}) + " (known: list, scan, show)",
                           "catalog");
    ParsedArgs parsed;
    try {
        parsed = parse_args(std::vector<std::string>(args.begin() + 1, args.end()),
                            {{"json", 0, false}, {"names", 0, false}});
    } catch (const UsageError& e) {
        return usage_error("catalog list: " + std::string(e.what()), "catalog");
    }
    if (!parsed.operands.empty())
        return usage_error("catalog list: unexpected argument '" + parsed.operands.front() + "'", "catalog");
    const bool json = parsed.has("json");
    if (parsed.has("names")) {
        // For scripts and completion: no source is looked at.
        const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
        for (const auto& [name, dataset] : config.datasets)
            std::cout << name << "\t" << join(dataset.tiers, ",") << "\n";
        return kExitOk;
    }

    const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
    const std::vector<CatalogRow> rows = catalog_rows(config);
    if (json)
        print_json(rows);
    else
        print_table(rows);
    return kExitOk;
}

}  // namespace dlstage::cli
