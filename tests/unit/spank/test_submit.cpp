#include <boost/test/unit_test.hpp>

#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/manifest.hpp"
#include "job/copy_record.hpp"
#include "job/identity.hpp"
#include "job/state_record.hpp"
#include "lib/strings.hpp"
#include "policies/purge.hpp"
#include "spank/source_facts_env.hpp"
#include "spank/submit.hpp"
#include "tests/unit/support/fake_spank.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
// A site with real sources in a temporary directory.
struct Site {
    test::TempDir dir;
    spank::PluginArgs args;
    test::FakeSpank api;

    explicit Site(const std::string& extra = "")
    {
        dir.write("small.bin", std::string(2048, 'x'));
        dir.write("big.bin", std::string(8192, 'x'));
        args.config_path = dir.write("dlstage.toml", R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "4K"
[tiers.ssd]
path = "/local/dlstage/%j"
[datasets.small]
source = ")" + dir / "small.bin" + R"("
tiers = ["shm"]
[datasets.big]
source = ")" + dir / "big.bin" + R"("
tiers = ["shm", "ssd"]
[datasets.gone]
source = ")" + dir / "missing" + R"("
tiers = ["shm"]
)" + extra);
    }

    int submit(const std::optional<std::string>& value)
    {
        api.stage_data = value;
        api.errors.clear();
        return spank::validate_submission(api, args);
    }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(submit)

BOOST_AUTO_TEST_CASE(no_option_means_no_work_even_with_a_broken_config)
{
    Site site;
    site.args.config_path = "/nonexistent.toml";
    BOOST_TEST(site.submit(std::nullopt) == 0);
    BOOST_TEST(site.api.errors.empty());
}

// --stage-data=help lists the catalog and ends the client with 0: nothing
// is submitted, and nothing is set for a job.
BOOST_AUTO_TEST_CASE(help_lists_the_catalog_and_submits_nothing)
{
    Site site;
    BOOST_TEST(site.submit("help") == 0);
    BOOST_TEST(site.api.errors.empty());
    BOOST_REQUIRE(site.api.ended.has_value());
    BOOST_TEST(*site.api.ended == 0);
    BOOST_TEST(site.api.control_env.empty());
    const std::string& text = site.api.printed;
    BOOST_TEST(text.find("NAME") != std::string::npos);
    BOOST_TEST(text.find("small  shm      file    copy  2.0 KiB  1") != std::string::npos, text);
    BOOST_TEST(text.find("big    shm,ssd") != std::string::npos, text);
    BOOST_TEST(text.find("gone   shm      ") != std::string::npos, text);
    BOOST_TEST(text.find("missing") != std::string::npos, text);
    BOOST_TEST(text.find("ssd: node, /local/dlstage/%j") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_dataset_named_help_is_refused_by_the_config)
{
    test::TempDir dir;
    const std::string path = dir.write("dlstage.toml", R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[datasets.help]
source = "/tmp"
tiers = ["shm"]
)");
    spank::PluginArgs args;
    args.config_path = path;
    test::FakeSpank api;
    api.stage_data = "help";
    BOOST_TEST(spank::validate_submission(api, args) == -1);
    BOOST_REQUIRE(api.errors.size() == 1u);
    BOOST_TEST(api.errors.front().find("datasets.help") != std::string::npos, api.errors.front());
    BOOST_TEST(api.errors.front().find("reserved") != std::string::npos, api.errors.front());
}

BOOST_AUTO_TEST_CASE(valid_request_is_accepted)
{
    Site site;
    BOOST_TEST(site.submit("small:shm,big:ssd") == 0);
    BOOST_TEST(site.api.errors.empty());
}

// The job's own options (Slurm's parser, through client_option) pick the
// override: the partition's smaller max_bytes refuses what the tier takes.
BOOST_AUTO_TEST_CASE(an_override_for_the_jobs_partition_applies_at_submit)
{
    Site site(R"(
[[overrides]]
partition = "tiny"
tier = "shm"
max_bytes = "1K"
)");
    BOOST_TEST(site.submit("small:shm") == 0);
    site.api.client_options["partition"] = "tiny";
    BOOST_TEST(site.submit("small:shm") == -1);
    BOOST_REQUIRE(site.api.errors.size() == 1u);
    BOOST_TEST(site.api.errors[0] ==
               "dataset 'small' needs 2.0 KiB but tier 'shm' allows at most 1.0 KiB (max_bytes = 1.0 KiB, set by "
               "overrides[0] (partition=tiny, line 17))");
    site.api.client_options["partition"] = "tiny,other";  // several: the node decides
    BOOST_TEST(site.submit("small:shm") == 0);
}

// A sparse 2 GiB source to a tier under /dev/shm (charged by default).
BOOST_AUTO_TEST_CASE(mem_smaller_than_the_staged_bytes_is_refused)
{
    Site site;
    const std::string sparse = site.dir.write("sparse.bin", "");
    BOOST_REQUIRE(::truncate(sparse.c_str(), 2ll << 30) == 0);
    site.args.config_path = site.dir.write("dlstage2.toml", R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
[tiers.ssd]
path = "/local/dlstage/%j"
[datasets.sparse]
source = ")" + sparse + R"("
tiers = ["shm", "ssd"]
)");
    BOOST_TEST(site.submit("sparse") == 0);  // no --mem: not known here
    site.api.client_options["mem"] = "4G";
    BOOST_TEST(site.submit("sparse") == 0);
    site.api.client_options["mem"] = "1024";
    BOOST_TEST(site.submit("sparse") == -1);
    BOOST_REQUIRE(site.api.errors.size() == 1u);
    BOOST_TEST(site.api.errors[0] ==
               "sparse (2.0 GiB) does not fit in the job's memory on tier 'shm' (--mem=1G per node; /dev/shm pages "
               "count against it): ask for --mem=3G or stage to 'ssd'");
    BOOST_TEST(site.submit("sparse:ssd") == 0);
}

BOOST_AUTO_TEST_CASE(unknown_dataset_is_refused_with_one_line)
{
    Site site;
    BOOST_TEST(site.submit("x") == -1);
    BOOST_TEST(site.api.errors.size() == 1u);
    BOOST_TEST(site.api.errors[0] == "unknown dataset 'x' (known: big, gone, small)");
}

BOOST_AUTO_TEST_CASE(tier_limits_and_missing_sources_are_refused)
{
    Site site;
    BOOST_TEST(site.submit("big:shm") == -1);
    BOOST_TEST(site.api.errors[0].find("allows at most 4.0 KiB") != std::string::npos);
    BOOST_TEST(site.submit("gone") == -1);
    BOOST_TEST(site.api.errors[0].find("No such file or directory (ask your site admins)") != std::string::npos);
    BOOST_TEST(site.submit("/nonexistent/data:ssd") == -1);
    BOOST_TEST(site.api.errors[0] == "cannot stage 'data': cannot read /nonexistent/data: No such file or directory");
}

BOOST_AUTO_TEST_CASE(broken_config_is_reported_as_such)
{
    Site site("[oops]\n");
    BOOST_TEST(site.submit("small") == -1);
    BOOST_TEST(site.api.errors[0].find("site configuration is broken") != std::string::npos);
    BOOST_TEST(site.api.errors[0].find("oops: unknown key") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(submit_facts)

BOOST_AUTO_TEST_CASE(accepted_request_sends_facts_and_config_to_the_job)
{
    Site site;
    BOOST_TEST(site.submit("small:shm,big:ssd") == 0);
    BOOST_TEST(site.api.control_env["DLSTAGE_FACTS"] == "big=8192/1;small=2048/1");
    BOOST_TEST(site.api.control_env["DLSTAGE_CONFIG"] == site.args.config_path);
    const auto facts = spank::decode_facts(site.api.control_env["DLSTAGE_FACTS"]);
    BOOST_TEST(*facts.at("big").bytes == 8192u);
    BOOST_TEST(spank::decode_facts("x=-/-;garbage;y=12/3").at("y").files.value() == 3u);
    BOOST_TEST(!spank::decode_facts("x=-/-").at("x").bytes.has_value());
    // A number too large for 64 bits is unknown, not UINT64_MAX; so is anything but digits.
    const auto odd = spank::decode_facts("x=18446744073709551616/+3;y=18446744073709551615/1.5");
    BOOST_TEST(!odd.at("x").bytes.has_value());
    BOOST_TEST(!odd.at("x").files.has_value());
    BOOST_TEST(*odd.at("y").bytes == 18446744073709551615u);
    BOOST_TEST(!odd.at("y").files.has_value());
}

// Six shards of 3 KiB (18 KiB) for a tier of 7K a node: split on 3 nodes, two each.
BOOST_AUTO_TEST_CASE(a_split_request_is_admitted_on_enough_nodes_and_each_node_gets_its_share)
{
    Site site;
    mkdir((site.dir / "shards").c_str(), 0755);
    for (int i = 0; i < 6; ++i)
        site.dir.write("shards/s-" + std::to_string(i) + ".tar", std::string(3072, 'x'));
    site.dir.write("dlstage.toml", std::string(R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "7K"
[datasets.wds]
source = ")") + site.dir / "shards/s-*.tar" +
                                       R"("
tiers = ["shm"]
)");
    site.api.client_options["nodes"] = "3";
    BOOST_TEST(site.submit("wds:shm:split") == 0);
    BOOST_TEST(site.api.control_env["DLSTAGE_FACTS"] == "wds=6144/-");  // two shards a node
    site.api.client_options["nodes"] = "2";
    BOOST_TEST(site.submit("wds:shm:split") == -1);
    BOOST_TEST(site.api.errors.at(0) == "dataset 'wds' (18.0 KiB) split over 2 nodes needs more than the 7.0 KiB tier "
                                        "'shm' takes per node; it fits split on 3 or more nodes: ask for -N 3 or more");
    BOOST_TEST(site.submit("wds:shm") == -1);
    BOOST_TEST(site.api.errors.at(0).find("; it would fit split on 3 or more nodes: --stage-data=wds:shm:split with "
                                          "-N 3 or more") != std::string::npos,
               site.api.errors.at(0));
    // No -N: Slurm says "1-0"; the nodes come later, and each checks its share.
    site.api.client_options["nodes"] = "1-0";
    BOOST_TEST(site.submit("wds:shm:split") == 0);
    BOOST_TEST(site.api.control_env["DLSTAGE_FACTS"] == "wds=-/-");
    site.api.client_options["nodes"] = "3-5";
    BOOST_TEST(site.submit("wds:shm:split") == 0);
}

BOOST_AUTO_TEST_CASE(the_stagers_own_srun_is_not_validated_again)
{
    Site site;
    site.api.env["DLSTAGE_STAGER_STEP"] = "1";
    BOOST_TEST(site.submit("no-such-dataset") == 0);
}

namespace {
// A catalog tree's manifest in site.manifest_dir that says it holds 8 KiB,
// while the tree on disk holds one byte: what submit believes shows where
// its facts came from.
std::string tree_site_extra(const test::TempDir& dir)
{
    return "[datasets.tree]\nsource = \"" + dir / "tree" + "\"\ntiers = [\"shm\"]\n";
}

void write_tree_manifest(const test::TempDir& dir)
{
    Manifest m;
    m.header.dataset = "tree";
    m.header.source = m.header.root = dir / "tree";
    m.header.format = Format::Dir;
    struct stat st {};
    BOOST_REQUIRE(stat((dir / "tree").c_str(), &st) == 0);
    m.header.root_times = FileTimes::of(st);
    m.entries.add(EntryType::Dir, "sub", 0755, 1, 0, 0);
    m.entries.add(EntryType::File, "sub/a", 0644, 1, 0, 8192);
    m.dir_ctimes.push_back({0, 1, 0});
    m.digests = {0, 0};
    write_manifest(dir / "manifests/tree.manifest", m);
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_trees_size_comes_from_its_current_manifest)
{
    test::TempDir dir;
    mkdir((dir / "tree").c_str(), 0755);
    mkdir((dir / "tree/sub").c_str(), 0755);
    dir.write("tree/sub/a", "x");
    mkdir((dir / "manifests").c_str(), 0755);
    Site site("[site]\nmanifest_dir = \"" + dir / "manifests" + "\"\n" + tree_site_extra(dir));
    // No manifest: the size is unknown and the request passes, as before.
    BOOST_TEST(site.submit("tree:shm") == 0);
    BOOST_TEST(site.api.control_env["DLSTAGE_FACTS"] == "tree=-/-");
    BOOST_TEST(site.api.infos.empty());

    write_tree_manifest(dir);
    BOOST_TEST(site.submit("tree:shm") == -1);
    BOOST_TEST(site.api.errors[0].find("allows at most 4.0 KiB") != std::string::npos);

    // Others could have written it: not believed, said so, and as before.
    chmod((dir / "manifests/tree.manifest").c_str(), 0664);
    BOOST_TEST(site.submit("tree:shm") == 0);
    BOOST_REQUIRE(site.api.infos.size() == 1u);
    BOOST_TEST(site.api.infos[0].find("not using the manifest of tree: manifest '") == 0u);
    BOOST_TEST(site.api.infos[0].find("is writable by group or others") != std::string::npos);
    chmod((dir / "manifests/tree.manifest").c_str(), 0644);

    // The root changed since the scan: stale, said so, and as before.
    dir.write("tree/new", "");
    site.api.infos.clear();
    BOOST_TEST(site.submit("tree:shm") == 0);
    BOOST_REQUIRE(site.api.infos.size() == 1u);
    BOOST_TEST(site.api.infos[0].find("manifest of tree is older than its source (") == 0u);
    BOOST_TEST(site.api.infos[0].find("run 'dlstage catalog scan tree'") != std::string::npos);
    BOOST_TEST(site.api.control_env["DLSTAGE_FACTS"] == "tree=-/-");
}

BOOST_AUTO_TEST_CASE(a_copy_near_its_purge_date_gets_a_warning_with_the_date_and_is_still_accepted)
{
    test::TempDir scratch;
    Site site(R"(
[tiers.scratch]
path = ")" + scratch.path() +
              R"(/%u"
scope = "shared"
cleanup = "keep"
purge_days = 90
warn_days = 14
[datasets.kept]
source = ")" + scratch.path() +
              R"("
tiers = ["scratch"]
)");
    const std::string user = this_user_name();
    mkdir((scratch / user).c_str(), 0700);
    const auto record = [&](std::int64_t oldest) {
        CopyRecord r;
        r.ready = {"kept", "scratch", scratch.path(), scratch / user + "/kept", 10, 1, {}};
        r.identity = "00";
        r.oldest = oldest;
        write_record(scratch / user + "/.ready-kept.toml", copy_record_table(r));
    };
    const std::int64_t now = std::time(nullptr);
    record(now - 80 * 86400);  // purged in 10 days
    BOOST_TEST(site.submit("kept:scratch") == 0);
    BOOST_REQUIRE(site.api.infos.size() == 1u);
    BOOST_TEST(site.api.infos[0].find("warning: the copy of 'kept' in tier 'scratch' will be purged from " +
                                      day_text(now + 10 * 86400)) != std::string::npos,
               site.api.infos[0]);
    site.api.infos.clear();
    record(now - 10 * 86400);  // 80 days left: nothing to say
    BOOST_TEST(site.submit("kept:scratch") == 0);
    BOOST_TEST(site.api.infos.empty());
}

BOOST_AUTO_TEST_SUITE_END()
