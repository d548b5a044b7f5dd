#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "lib/state_record.hpp"
#include "spank/job_script.hpp"
#include "tests/unit/fake_spank.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;

namespace {
struct Node {
    test::TempDir dir;
    spank::PluginArgs args;
    test::FakeSpank api;

    explicit Node(const std::string& datasets = "[datasets.imagenet]\nsource = \"/p/imagenet\"\ntiers = [\"shm\"]\n")
    {
        api.ctx = spank::Context::JobScript;
        api.env = {{"SLURMD_NODENAME", "n2"}, {"SLURM_JOB_USER", "alice"}};
        args.config_path = dir.write("dlstage.toml", "[site]\nstate_dir = \"" + dir / "state" + R"("
[tiers.shm]
path = "/dev/shm/dlstage/%u/%j"
)" + datasets);
    }

    std::string record_path() const { return node_record_path(dir / "state", "42", "n2", "prolog"); }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(job_script)

BOOST_AUTO_TEST_CASE(prolog_records_the_resolved_request)
{
    Node node;
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    const toml::table record = read_record(node.record_path());
    BOOST_TEST(record["status"].value_or(std::string()) == "accepted");
    BOOST_TEST(record["stage_data"].value_or(std::string()) == "imagenet");
    BOOST_TEST(record["node"].value_or(std::string()) == "n2");
    BOOST_TEST(record["user"].value_or(std::string()) == "alice");
    BOOST_TEST(record["datasets"][0]["directory"].value_or(std::string()) == "/dev/shm/dlstage/alice/42");
    BOOST_TEST(record["datasets"][0]["env"].value_or(std::string()) == "DLSTAGE_IMAGENET");
    BOOST_TEST(node.api.infos.size() == 1u);
}

BOOST_AUTO_TEST_CASE(prolog_without_option_does_nothing)
{
    Node node;
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    struct stat st {};
    BOOST_TEST(stat((node.dir / "state").c_str(), &st) != 0);
}

BOOST_AUTO_TEST_CASE(request_refused_by_a_changed_config_never_drains)
{
    Node node("");  // the catalog lost the dataset since submit
    node.api.stage_data = "imagenet";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    const toml::table record = read_record(node.record_path());
    BOOST_TEST(record["status"].value_or(std::string()) == "refused");
    BOOST_TEST(record["message"].value_or(std::string()).find("unknown dataset 'imagenet'") == 0u);
    BOOST_TEST(node.api.errors.size() == 1u);
}

BOOST_AUTO_TEST_CASE(hostile_user_name_cannot_escape_the_tier)
{
    Node node;
    node.api.stage_data = "imagenet";
    node.api.env["SLURM_JOB_USER"] = "..";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    const toml::table record = read_record(node.record_path());
    BOOST_TEST(record["status"].value_or(std::string()) == "refused");
    BOOST_TEST(record["message"].value_or(std::string()).find("escape the tier root") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(broken_config_is_logged_not_fatal)
{
    Node node;
    node.api.stage_data = "imagenet";
    node.args.config_path = node.dir / "missing.toml";
    BOOST_TEST(spank::job_prolog(node.api, node.args) == 0);
    BOOST_TEST(node.api.errors.size() == 1u);
    BOOST_TEST(node.api.errors[0].find("cannot read configuration file") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
