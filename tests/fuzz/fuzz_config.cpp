// parse_config: any text gives a Config that keeps the safety rules, or a
// ConfigError with one-line problems; nothing else escapes.
#include <algorithm>

#include "config/config.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;
using fuzz::expect;

namespace {
void check_config(const Config& config, std::string_view text)
{
    expect(!config.tiers.empty(), "a valid config has a tier", text);
    expect(config.site.state_dir.front() == '/', "state_dir is absolute", text);
    for (const auto& [name, tier] : config.tiers) {
        expect(is_simple_name(name, false), "tier names are simple", text);
        expect(tier.path.text().front() == '/', "a tier path is absolute", text);
        const std::string& root = tier.path.root();
        expect(root.size() > 1 && (tier.path.text() == root || starts_with(tier.path.text(), root + "/")),
               "a tier path is its fixed root (no escapes) or lies below it", text);
        expect(tier.cleanup != Cleanup::JobEnd || tier.path.uses('j'), "job-end cleanup needs %j", text);
        if (tier.max_bytes.kind == ByteLimit::Kind::Bytes)
            expect(tier.max_bytes.bytes > 0, "a byte limit is more than 0", text);
    }
    for (const auto& [name, dataset] : config.datasets) {
        expect(is_simple_name(name, true), "dataset names are simple", text);
        expect(dataset.source.front() == '/', "a source is absolute", text);
        expect(!dataset.tiers.empty(), "a dataset has a tier", text);
        for (const std::string& tier : dataset.tiers)
            expect(config.find_tier(tier) != nullptr, "a dataset's tiers exist", text);
        expect(dataset_env_name(name) != kDatasetsVar, "no dataset is exported as DLSTAGE_DATASETS", text);
    }
    if (!config.site.default_tier.empty())
        expect(config.find_tier(config.site.default_tier) != nullptr, "the default tier exists", text);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text = fuzz::text_of(data, size);
    try {
        check_config(parse_config(text, "fuzz.toml"), text);
    } catch (const ConfigError& e) {
        expect(!e.problems().empty(), "a ConfigError lists its problems", text);
        for (const ConfigProblem& problem : e.problems())
            fuzz::expect_one_line(problem.str(), text);
        fuzz::expect_one_line(e.what(), text);
    }
    // Any other Error, or anything else, escapes: a finding.
    return 0;
}
