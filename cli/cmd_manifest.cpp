// dlstage catalog scan NAME / catalog show NAME: a dataset's manifest
// (stager/plan/manifest_scan.hpp), written once by an admin and read by checks that
// must not walk the parallel file system.
#include <cerrno>
#include <chrono>
#include <ctime>
#include <iostream>
#include <sys/stat.h>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"
#include "stager/plan/manifest_scan.hpp"

namespace dlstage::cli {

namespace {
constexpr std::uint64_t kMaxScanThreads = 256;
constexpr std::size_t kChangesShown = 5;

const Dataset& catalog_dataset(const Config& config, const std::string& name)
{
    if (const Dataset* dataset = config.find_dataset(name))
        return *dataset;
    throw Error("unknown dataset " + quoted(name) + " (known: " + join(config.dataset_names(), ", ") +
                "; see dlstage catalog list)");
}

// The manifest directory, made if missing (0755: users' jobs read it).
void make_manifest_dir(const std::string& dir)
{
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw_cannot("create", dir + " (site.manifest_dir)", errno);
}

std::string age(std::int64_t since)
{
    const std::int64_t s = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::time(nullptr)) - since);
    if (s < 120)
        return std::to_string(s) + " s ago";
    if (s < 2 * 3600)
        return std::to_string(s / 60) + " min ago";
    if (s < 2 * 86400)
        return std::to_string(s / 3600) + " h ago";
    return std::to_string(s / 86400) + " days ago";
}

int scan(const Config& config, const std::string& name, unsigned threads)
{
    const Dataset& dataset = catalog_dataset(config, name);
    const std::string path = stager::manifest_path(config, name);
    make_manifest_dir(config.site.manifests());
    const auto start = std::chrono::steady_clock::now();
    const Manifest manifest = stager::scan_dataset(dataset, threads);
    write_manifest(path, manifest);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::uint64_t bytes = manifest.header.bytes;
    char rate[64];
    std::snprintf(rate, sizeof rate, " in %.1f s (%s/s)", seconds,
                  format_size(static_cast<std::uint64_t>(static_cast<double>(bytes) / std::max(seconds, 1e-3)))
                      .c_str());
    say("scanned " + name + ": " + std::to_string(manifest.header.files) + " files, " + format_size(bytes) + rate +
        "; manifest " + path);
    return kExitOk;
}

int show(const Config& config, const std::string& name, bool json)
{
    const Dataset& dataset = catalog_dataset(config, name);
    const std::string path = stager::manifest_path(config, name);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
        throw Error("no manifest of " + name + " in " + config.site.manifests() +
                    " (an admin makes one with 'dlstage catalog scan " + name + "')");
    const Manifest manifest = read_manifest(path);
    const stager::SourceChanges changes = stager::changes_since(manifest, stager::build_plan(dataset), kChangesShown);
    const bool moved = manifest.header.source != dataset.source;
    // What the stager decides before it plans from the manifest: the
    // directories' times (the walk above compares every entry).
    std::string stale;
    struct stat root {};
    if (::stat(dataset.source.c_str(), &root) != 0)
        stale = cannot("read", shown_path(dataset.source), errno);
    else if (stale = stale_at_root(manifest.header, dataset, root); stale.empty())
        stale = stale_below_root(manifest, 16);
    const std::string untrusted = untrusted_manifest_reason(path);
    if (json) {
        toml::array examples;
        for (const std::string& line : changes.examples)
            examples.push_back(line);
        std::cout << toml::json_formatter{toml::table{{"dataset", name},
                                                      {"source", dataset.source},
                                                      {"manifest", path},
                                                      {"scanned", manifest.header.scanned},
                                                      {"files", static_cast<std::int64_t>(manifest.header.files)},
                                                      {"bytes", static_cast<std::int64_t>(manifest.header.bytes)},
                                                      {"source_changed", moved || changes.count > 0},
                                                      {"current", stale.empty()},
                                                      {"trusted", untrusted.empty()},
                                                      {"changes", static_cast<std::int64_t>(changes.count)},
                                                      {"change_examples", examples}}}
                  << "\n";
        return kExitOk;
    }
    std::cout << "dataset   " << name << "\n"
              << "source    " << printable(dataset.source) << "\n"
              << "manifest  " << printable(path) << "\n"
              << "scanned   " << moment_text(manifest.header.scanned) << " (" << age(manifest.header.scanned) << ")\n"
              << "files     " << manifest.header.files << "\n"
              << "bytes     " << format_size(manifest.header.bytes) << "\n"
              << "current   " << (stale.empty() ? "yes: jobs plan from it without a walk" : "no: " + printable(stale))
              << "\n";
    if (!untrusted.empty())
        std::cout << "trusted   no: " << printable(untrusted) << "\n";
    if (moved)
        std::cout << "changed   the catalog's source was " << printable(manifest.header.source) << " when scanned\n";
    else if (changes.count == 0)
        std::cout << "changed   no: every entry's type, size and mtime as scanned\n";
    else {
        std::cout << "changed   yes: " << changes.count << (changes.count == 1 ? " difference" : " differences")
                  << "; scan again\n";
        for (const std::string& line : changes.examples)
            std::cout << "          " << printable(line) << "\n";
    }
    return kExitOk;
}
}  // namespace

int cmd_catalog_manifest(const Config& config, const std::vector<std::string>& args)
{
    const std::string& what = args.at(0);
    std::vector<OptionSpec> specs;
    if (what == "show")
        specs.push_back({"json", 0, false});
    else
        specs.push_back({"threads", 0, true});
    ParsedArgs parsed;
    try {
        parsed = parse_args(std::vector<std::string>(args.begin() + 1, args.end()), specs);
    } catch (const UsageError& e) {
        return usage_error("catalog " + what + ": " + e.what(), "catalog");
    }
    if (parsed.operands.size() > 1)
        return usage_error("catalog " + what + ": unexpected argument " + quoted(parsed.operands[1]), "catalog");
    const std::string name = parsed.operands.empty() ? "" : parsed.operands.front();
    const bool json = parsed.has("json");
    unsigned threads = 8;
    if (const auto value = parsed.last("threads"))
        threads = static_cast<unsigned>(naming("--threads", [&] { return parse_count(*value, 1, kMaxScanThreads); }));
    if (name.empty())
        return usage_error("catalog " + what + " needs a dataset NAME", "catalog");
    return what == "scan" ? scan(config, name, threads) : show(config, name, json);
}

}  // namespace dlstage::cli
