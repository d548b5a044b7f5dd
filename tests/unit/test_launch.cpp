#include <boost/test/unit_test.hpp>

#include <csignal>
#include <sys/stat.h>

#include "launch/job_step.hpp"
#include "launch/stager_step.hpp"
#include "lib/job_layout.hpp"
#include "lib/state_record.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::launch;

namespace {
using Lines = std::vector<std::string>;

struct Staging {
    test::TempDir state;
    Config config;
    StagerStep step{"/etc/dlstage/dlstage.toml", "5", "3", "imagenet:shm", {}};
    Staging() { config.site.state_dir = state.path(); }

    // A failure record a rank left, as the stager writes it.
    void record_failure(const std::string& node, const std::string& message) const
    {
        const std::string user = job_user_dir(state.path(), "5");
        for (const std::string& dir : {state / "jobs", state / "jobs/5", user})
            mkdir(dir.c_str(), 0755);
        BOOST_REQUIRE(write_failure_record(state.path(), "5", node, message));
    }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(launch)

BOOST_AUTO_TEST_CASE(a_step_is_one_task_on_every_node_named_for_sacct)
{
    Config config;
    config.site.launcher = "  srun  --mpi=pmix --overlap ";
    BOOST_TEST(job_step_command(config, "5", "3", "dlstage-stage", OnTaskFailure::StopStep, StepProgram::Mpi) ==
                   Lines({"srun", "--mpi=pmix", "--overlap", "--jobid=5", "--nodes=3", "--ntasks=3",
                          "--kill-on-bad-exit=1", "--job-name=dlstage-stage"}),
               boost::test_tools::per_element());
    BOOST_TEST(job_step_command(config, "5", "3", "dlstage-mount", OnTaskFailure::KeepOthers, StepProgram::NotMpi) ==
                   Lines({"srun", "--overlap", "--mpi=none", "--jobid=5", "--nodes=3", "--ntasks=3",
                          "--kill-on-bad-exit=0", "--job-name=dlstage-mount"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failure_is_explained_by_the_ranks_or_else_by_srun_or_else_by_the_exit_status)
{
    Staging staging;
    LauncherReport report;
    report.exit_code = 128 + SIGKILL;
    report.wait_status = SIGKILL;
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed (the launcher killed by signal 9 (Killed))"},
               boost::test_tools::per_element());
    report.exit_code = 3;
    report.wait_status = 3 << 8;
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed (the launcher exited with status 3)"},
               boost::test_tools::per_element());
    report.task_failure = "n2: task 1: Killed";
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed on n2: the stager ended early (n2: task 1: Killed)"},
               boost::test_tools::per_element());
    staging.record_failure("n2", "no room");
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines({"no room", "staging imagenet:shm failed; see the messages above"}),
               boost::test_tools::per_element());
    report.stager_explained = true;  // the record would say it twice
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed; see the messages above"},
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
