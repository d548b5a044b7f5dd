#include <boost/test/unit_test.hpp>

#include "config/stage_spec.hpp"
#include "lib/error.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;

namespace {
Config catalog(const std::string& site = "[site]\ndefault_tier = \"shm\"\n")
{
    return parse_config(site + R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[tiers.ssd]
path = "/local/dlstage/%j"
[tiers.scratch]
path = "/p/scratch/dlstage/%u/%j"
[datasets.imagenet]
source = "/p/data/imagenet"
tiers = ["shm", "ssd"]
[datasets.coco]
source = "/p/data/coco"
tiers = ["ssd"]
[datasets.cifar]
source = "/p/data/cifar.sqfs"
tiers = ["scratch", "shm"]
)",
                        "t.toml");
}

std::string error_of(const Config& config, const std::string& value)
{
    return test::error_of([&] { resolve_stage_data(config, value); });
}
}  // namespace

BOOST_AUTO_TEST_SUITE(stage_spec)

BOOST_AUTO_TEST_CASE(split_or_whole_after_the_tier_says_how_a_dataset_lies_over_the_nodes)
{
    const auto requests = parse_stage_specs("imagenet:shm:split,coco:ssd:whole,imagenet::split,/p/x:shm:split,"
                                            "/p/y::split,/p/z:shm");
    BOOST_TEST_REQUIRE(requests.size() == 6u);
    BOOST_TEST(
        (requests[0].name == "imagenet" && requests[0].tier == "shm" && *requests[0].placement == Placement::Split));
    BOOST_TEST((requests[1].tier == "ssd" && *requests[1].placement == Placement::Whole));
    BOOST_TEST((requests[2].tier.empty() && *requests[2].placement == Placement::Split));
    BOOST_TEST((requests[3].name == "/p/x" && requests[3].tier == "shm" && *requests[3].placement == Placement::Split));
    BOOST_TEST((requests[4].name == "/p/y" && requests[4].tier.empty() && *requests[4].placement == Placement::Split));
    BOOST_TEST(!requests[5].placement.has_value());
    BOOST_TEST(error_of(catalog(), "imagenet:split") ==
               "missing tier before ':split' in 'imagenet:split' (e.g. --stage-data=in21k:shm:split; NAME::split for "
               "the default tier)");
    BOOST_TEST(error_of(catalog(), "imagenet:shm:splot").find("malformed entry 'imagenet:shm:splot'") == 0u);
    BOOST_TEST(error_of(catalog(), "imagenet:shm:split,/p/x/imagenet-index:shm") ==
               "'imagenet-index' would be exported as DLSTAGE_IMAGENET_INDEX, which names the index of split dataset "
               "'imagenet'; stage one of them under another name");
    BOOST_TEST(error_of(catalog(), "imagenet:shm,/p/x/imagenet-index:shm").empty());  // whole: no index
    const auto items = resolve_stage_data(catalog(), "imagenet:shm:split,coco");
    BOOST_TEST(items[0].split);
    BOOST_TEST(!items[1].split);
}

BOOST_AUTO_TEST_CASE(parses_names_tiers_and_paths)
{
    const auto r = parse_stage_specs(" imagenet:shm, coco ,/p/x/data.sqfs:ssd,/p/a:b/dir ");
    BOOST_TEST(r.size() == 4u);
    BOOST_TEST(r[0].name == "imagenet");
    BOOST_TEST(r[0].tier == "shm");
    BOOST_TEST(r[1].tier.empty());
    BOOST_TEST(r[2].is_path);
    BOOST_TEST(r[2].name == "/p/x/data.sqfs");
    BOOST_TEST(r[2].tier == "ssd");
    // A ':' inside a path is not a tier separator when a '/' follows it.
    BOOST_TEST(r[3].name == "/p/a:b/dir");
    BOOST_TEST(r[3].tier.empty());
}

BOOST_AUTO_TEST_CASE(malformed_specs_get_precise_messages)
{
    const Config config = catalog();
    BOOST_TEST(error_of(config, "").find("needs at least one dataset") != std::string::npos);
    BOOST_TEST(error_of(config, "imagenet,,coco").find("empty entry") != std::string::npos);
    BOOST_TEST(error_of(config, "imagenet,").find("empty entry") != std::string::npos);
    // Found by tests/fuzz: the value was quoted raw, a CR or newline broke the line.
    BOOST_TEST(error_of(config, "a,\r,b") == "empty entry in --stage-data=a,\\x0d,b (remove the extra ',')");
    BOOST_TEST(error_of(config, "a:b:c").find("malformed entry 'a:b:c': expected NAME[:TIER[:split|whole]]") !=
               std::string::npos);
    BOOST_TEST(error_of(config, "imagenet:").find("missing tier after ':'") != std::string::npos);
    BOOST_TEST(error_of(config, "/p/x:").find("missing tier after ':'") != std::string::npos);
    BOOST_TEST(error_of(config, "data/x").find("neither a dataset name nor an absolute path") != std::string::npos);
    BOOST_TEST(error_of(config, "image net").find("invalid dataset name 'image net'") != std::string::npos);
    BOOST_TEST(error_of(config, "imagenet:s h m").find("invalid tier name") != std::string::npos);
    BOOST_TEST(error_of(config, "/").find("root directory") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_dataset_lists_the_known_ones)
{
    const Config config = catalog();
    BOOST_TEST(error_of(config, "x") == "unknown dataset 'x' (known: cifar, coco, imagenet)");
    BOOST_TEST(error_of(config, "imagnet") ==
               "unknown dataset 'imagnet' (known: cifar, coco, imagenet); did you mean 'imagenet'?");
}

BOOST_AUTO_TEST_CASE(tiers_are_checked_against_the_dataset)
{
    const Config config = catalog();
    BOOST_TEST(error_of(config, "imagenet:nvme") == "unknown tier 'nvme' (known: scratch, shm, ssd)");
    BOOST_TEST(error_of(config, "coco:shm") == "tier 'shm' is not allowed for dataset 'coco' (allowed: ssd)");
}

BOOST_AUTO_TEST_CASE(default_tier_is_the_site_default_when_allowed_else_the_first)
{
    const auto items = resolve_stage_data(catalog(), "imagenet,coco,cifar");
    BOOST_TEST(items[0].tier.name == "shm");  // site default, allowed
    BOOST_TEST(items[1].tier.name == "ssd");  // site default not allowed: first
    BOOST_TEST(items[2].tier.name == "shm");  // site default wins over the first
    BOOST_TEST(items[0].env_name == "DLSTAGE_IMAGENET");
    const auto no_site_default = resolve_stage_data(catalog(""), "cifar");
    BOOST_TEST(no_site_default[0].tier.name == "scratch");
}

BOOST_AUTO_TEST_CASE(duplicates_are_refused)
{
    const Config config = catalog();
    BOOST_TEST(error_of(config, "imagenet:shm,imagenet:ssd") ==
               "dataset 'imagenet' is requested twice in --stage-data; stage it once, to one tier");
    BOOST_TEST(error_of(config, "coco,coco").find("requested twice") != std::string::npos);
    BOOST_TEST(error_of(config, "imagenet,/p/other/imagenet:ssd") ==
               "'imagenet' and '/p/other/imagenet' would both be exported as DLSTAGE_IMAGENET; stage one of "
               "them, or rename the file");
}

BOOST_AUTO_TEST_CASE(paths_become_datasets)
{
    const auto items = resolve_stage_data(catalog(), "/p/scratch/me/Train Set.tar.zst:ssd,/p/shards/*.tar");
    BOOST_TEST(items[0].dataset.name == "Train_Set");
    BOOST_TEST(items[0].env_name == "DLSTAGE_TRAIN_SET");
    BOOST_TEST(!items[0].dataset.from_catalog);
    BOOST_TEST(items[0].tier.name == "ssd");
    BOOST_TEST(items[1].dataset.name == "shards");
    BOOST_TEST(items[1].tier.name == "shm");
    BOOST_TEST(to_string(items[1].dataset.known_format()) == "tar");
}

BOOST_AUTO_TEST_CASE(paths_need_a_tier_without_a_site_default_and_can_be_disabled)
{
    BOOST_TEST(error_of(catalog(""), "/p/x").find("no tier given for '/p/x'") != std::string::npos);
    const Config locked = catalog("[site]\nallow_paths = false\n");
    BOOST_TEST(error_of(locked, "/p/x:shm").find("disabled on this cluster") != std::string::npos);
    BOOST_TEST(error_of(catalog(), "/p/.hidden:shm").find("cannot derive a dataset name") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(tier_directory_expands_the_template)
{
    const auto items = resolve_stage_data(catalog(), "cifar:scratch");
    BOOST_TEST(tier_directory(items[0], {"77", "bob", "n1"}) == "/p/scratch/dlstage/bob/77");
    BOOST_CHECK_THROW(tier_directory(items[0], {"77", "..", "n1"}), Error);
}

BOOST_AUTO_TEST_SUITE_END()
