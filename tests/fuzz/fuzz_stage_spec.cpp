// --stage-data values against a fixed catalog: parse_stage_specs and
// resolve_stage_requests refuse with dlstage::Error or yield items whose
// tier directories, for any job id, user and node, stay below the tier's
// root.  Input: SPEC, then optionally NUL JOB NUL USER NUL NODE.
#include <algorithm>

#include "config/config.hpp"
#include "config/stage_spec.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;
using fuzz::expect;

namespace {
const Config& catalog()
{
    static const Config config = parse_config(R"(
[site]
default_tier = "shm"
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "50%"
[tiers.ssd]
path = "/local/dlstage/%u/%j-%n"
max_bytes = "100G"
[tiers.cache]
path = "/cache/dlstage/%%%u/%j"
cleanup = "cache"
[tiers.fixed]
path = "/scratch/datasets"
cleanup = "keep"
[datasets.imagenet]
source = "/p/data/imagenet"
tiers = ["shm", "ssd"]
[datasets."coco.2017"]
source = "/p/data/coco.sqfs"
mode = "mount"
tiers = ["ssd", "cache", "fixed"]
[datasets.shards]
source = "/p/data/shards/train-*.tar"
mode = "extract"
tiers = ["ssd"]
)",
                                              "fuzz-catalog.toml");
    return config;
}

void check_directory(const StageItem& item, const TemplateValues& values, std::string_view text)
{
    std::string dir;
    try {
        dir = tier_directory(item, values);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return;
    }
    const std::string& root = item.tier.path.root();
    expect(dir == root || starts_with(dir, root + "/"), "a tier directory is the tier root or lies below it", dir);
    for (const std::string& part : split(std::string_view(dir).substr(1), '/'))
        expect(!part.empty() && part != "." && part != "..", "a tier directory has no empty, . or .. parts", dir);
    expect(dir.find('\0') == std::string::npos, "a tier directory has no NUL", dir);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto in = fuzz::fields(fuzz::text_of(data, size), 4);
    const std::string& text = in[0];
    std::vector<StageRequest> requests;
    try {
        requests = parse_stage_specs(text);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return 0;
    }
    expect(!requests.empty(), "a parsed value has an entry", text);
    for (const StageRequest& r : requests) {
        expect(!r.name.empty() && r.name != "/", "an entry names something", text);
        expect(r.is_path == (r.name.front() == '/'), "paths, and only paths, start with '/'", text);
        expect(r.tier.empty() || is_simple_name(r.tier, false), "a tier is a simple name", text);
    }
    std::vector<StageItem> items;
    try {
        items = resolve_stage_requests(catalog(), requests);
    } catch (const Error& e) {
        fuzz::expect_one_line(e.what(), text);
        return 0;
    }
    expect(items.size() == requests.size(), "one item per entry", text);
    const TemplateValues values{in[1].empty() ? "123" : in[1], in[2].empty() ? "alice" : in[2],
                                in[3].empty() ? "n1" : in[3]};
    for (const StageItem& item : items) {
        expect(item.env_name == dataset_env_name(item.dataset.name), "the variable is the dataset's", text);
        expect(is_simple_name(item.dataset.name, true), "a dataset name is simple", text);
        expect(std::find(item.dataset.tiers.begin(), item.dataset.tiers.end(), item.tier.name) !=
                   item.dataset.tiers.end(),
               "the tier is one the dataset allows", text);
        check_directory(item, values, text);
    }
    return 0;
}
