// The job-start contexts as the user: an srun that created its job
// (spank/srun.cpp) and slurmstepd's task_init (spank/slurmstepd.cpp), both
// staging through `dlstage stage` (spank/stage_command.cpp).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <sys/stat.h>

#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "spank/prolog_epilog.hpp"
#include "spank/slurmstepd.hpp"
#include "spank/srun.hpp"
#include "spank/stage_command.hpp"
#include "tests/unit/support/spank_node.hpp"

using namespace dlstage;
using test::Node;

namespace {
bool has(const std::vector<std::string>& env, const std::string& entry)
{
    return std::find(env.begin(), env.end(), entry) != env.end();
}

// Slurmstepd about to start a task of a job that asked for imagenet.
void starting_a_task(Node& node, bool batch_step)
{
    node.api.ctx = spank::Context::Remote;
    node.api.stage_data = "imagenet";
    node.api.batch_step = batch_step;
}

// ... of a job whose prolog has run and whose stager has written the ready
// marker of imagenet on this node.
void stage_imagenet_on(Node& node, bool batch_step = false)
{
    starting_a_task(node, batch_step);
    BOOST_REQUIRE(spank::job_prolog(node.api, node.args) == 0);
    ReadyMarker marker;
    marker.path = node.job_dir() + "/imagenet";
    write_ready_marker(node.job_dir() + "/.ready-imagenet.toml", marker);
}
}  // namespace

BOOST_AUTO_TEST_SUITE(job_start)

BOOST_AUTO_TEST_CASE(batch_step_stages_then_exports_from_the_markers)
{
    Node node;
    stage_imagenet_on(node, true);

    BOOST_TEST(spank::task_init(node.api, node.args) == 0);
    BOOST_REQUIRE(node.api.runs.size() == 1u);
    const auto& run = node.api.runs[0];
    BOOST_TEST(run.argv == std::vector<std::string>({"/opt/dlstage/bin/dlstage", "stage", "--quiet"}));
    BOOST_TEST(has(run.env, "DLSTAGE_STAGE_DATA=imagenet"));
    BOOST_TEST(has(run.env, "DLSTAGE_CONFIG=" + node.args.config_path));
    BOOST_TEST(has(run.env, "SLURMD_NODENAME=n2"));  // the job's own environment goes along
    BOOST_TEST(node.api.env["DLSTAGE_IMAGENET"] == node.job_dir() + "/imagenet");
    BOOST_TEST(node.api.env["DLSTAGE_DATASETS"] == "imagenet");
}

BOOST_AUTO_TEST_CASE(failed_staging_stops_the_batch_script)
{
    Node node;
    starting_a_task(node, true);
    node.api.run_status = 1;
    BOOST_TEST(spank::task_init(node.api, node.args) == -1);
    BOOST_TEST(node.api.errors.back().find("the job script does not start") != std::string::npos);
    BOOST_TEST(node.api.env.count("DLSTAGE_IMAGENET") == 0u);
}

BOOST_AUTO_TEST_CASE(other_steps_only_export_and_unstaged_data_stays_unset)
{
    Node node;
    starting_a_task(node, false);
    BOOST_TEST(spank::task_init(node.api, node.args) == 0);
    BOOST_TEST(node.api.runs.empty());
    BOOST_TEST(node.api.env.count("DLSTAGE_IMAGENET") == 0u);
    BOOST_TEST(node.api.env.count("DLSTAGE_DATASETS") == 0u);
}

BOOST_AUTO_TEST_CASE(the_stagers_own_step_does_nothing)
{
    Node node;
    starting_a_task(node, true);
    node.api.env[kStagerStepVar] = "1";
    BOOST_TEST(spank::task_init(node.api, node.args) == 0);
    BOOST_TEST(node.api.runs.empty());
}

BOOST_AUTO_TEST_CASE(srun_stages_only_the_job_it_created)
{
    Node node;
    node.api.ctx = spank::Context::Local;
    node.api.stage_data = "imagenet";
    node.api.id = 77;
    node.api.nnodes = 3;
    BOOST_TEST(spank::local_user_init(node.api, node.args, true) == 0);
    BOOST_TEST(node.api.runs.empty());
    BOOST_TEST(spank::local_user_init(node.api, node.args, false) == 0);
    BOOST_REQUIRE(node.api.runs.size() == 1u);
    const auto& env = node.api.runs[0].env;
    BOOST_TEST(has(env, "SLURM_JOB_ID=77"));
    BOOST_TEST(has(env, "SLURM_JOB_NUM_NODES=3"));
    node.api.run_status = 1;
    BOOST_TEST(spank::local_user_init(node.api, node.args, false) == -1);
}

BOOST_AUTO_TEST_CASE(a_step_after_staging_sees_the_path_without_staging_again)
{
    Node node;
    stage_imagenet_on(node);
    node.api.env["DLSTAGE_IMAGENET"] = "/stale/from/the/batch/step";
    BOOST_TEST(spank::task_init(node.api, node.args) == 0);
    BOOST_TEST(node.api.runs.empty());
    BOOST_TEST(node.api.env["DLSTAGE_IMAGENET"] == node.job_dir() + "/imagenet");
    BOOST_TEST(node.api.env["DLSTAGE_DATASETS"] == "imagenet");
}

BOOST_AUTO_TEST_CASE(a_path_passed_on_by_srun_is_unset_where_nothing_is_staged)
{
    Node node;
    starting_a_task(node, false);
    node.api.env["DLSTAGE_IMAGENET"] = "/dev/shm/dlstage/alice/42/imagenet";
    node.api.env["DLSTAGE_DATASETS"] = "imagenet";
    BOOST_TEST(spank::task_init(node.api, node.args) == 0);
    BOOST_TEST(node.api.env.count("DLSTAGE_IMAGENET") == 0u);
    BOOST_TEST(node.api.env.count("DLSTAGE_DATASETS") == 0u);
}

BOOST_AUTO_TEST_CASE(a_stager_that_cannot_start_is_named_with_its_plugstack_key)
{
    Node node;
    starting_a_task(node, true);
    node.api.run_status = 127;
    BOOST_TEST(spank::task_init(node.api, node.args) == -1);
    BOOST_REQUIRE(node.api.errors.size() == 2u);
    BOOST_TEST(node.api.errors[0] ==
               "cannot run /opt/dlstage/bin/dlstage (plugstack.conf dlstage=): staging did not start");
}

BOOST_AUTO_TEST_CASE(a_config_root_code_refuses_stops_the_task_with_that_reason)
{
    Node node;
    starting_a_task(node, true);
    BOOST_REQUIRE(chmod(node.args.config_path.c_str(), 0666) == 0);
    BOOST_TEST(spank::task_init(node.api, node.args) == -1);
    BOOST_TEST(node.api.runs.empty());
    BOOST_REQUIRE(node.api.errors.size() == 1u);
    BOOST_TEST(node.api.errors[0].find(node.args.config_path) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(srun_without_job_facts_refuses_to_start_the_tasks)
{
    Node node;
    node.api.ctx = spank::Context::Local;
    node.api.stage_data = "imagenet";
    node.api.id.reset();
    BOOST_TEST(spank::local_user_init(node.api, node.args, false) == -1);
    BOOST_TEST(node.api.runs.empty());
    BOOST_TEST(node.api.errors.back() == "srun did not provide the job id or node count; cannot stage imagenet");
}

BOOST_AUTO_TEST_CASE(the_stagers_own_srun_does_not_stage_again)
{
    Node node;
    node.api.ctx = spank::Context::Local;
    node.api.stage_data = "imagenet";
    node.api.env[kStagerStepVar] = "1";
    BOOST_TEST(spank::local_user_init(node.api, node.args, false) == 0);
    BOOST_TEST(node.api.runs.empty());
}

BOOST_AUTO_TEST_CASE(put_env_replaces_every_earlier_value)
{
    std::vector<std::string> env = {"A=1", "AB=2", "A=3"};
    spank::put_env(env, "A", "4");
    BOOST_TEST(env == std::vector<std::string>({"AB=2", "A=4"}));
}

BOOST_AUTO_TEST_SUITE_END()
