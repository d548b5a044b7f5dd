#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <sys/stat.h>

#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "launch/job_end.hpp"
#include "launch/job_step.hpp"
#include "launch/stager_step.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::launch;

namespace {
using Lines = std::vector<std::string>;
using dlstage::test::content_of;
using dlstage::test::source_path;

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
                          "--kill-on-bad-exit=1", "--job-name=dlstage-stage", "--wait=300"}),
               boost::test_tools::per_element());
    BOOST_TEST(job_step_command(config, "5", "3", "dlstage-mount", OnTaskFailure::KeepOthers, StepProgram::NotMpi) ==
                   Lines({"srun", "--overlap", "--mpi=none", "--jobid=5", "--nodes=3", "--ntasks=3",
                          "--kill-on-bad-exit=0", "--job-name=dlstage-mount"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_stopped_task_is_ended_a_stall_bound_after_the_first_ended_unless_the_watchdog_is_off)
{
    Config config;
    config.site.launcher = "srun";
    config.site.stall_timeout = 15;
    BOOST_TEST(job_step_command(config, "5", "2", "dlstage-stage", OnTaskFailure::StopStep, StepProgram::Mpi).back() ==
               "--wait=15");
    config.site.stall_timeout = 0;
    BOOST_TEST(job_step_command(config, "5", "2", "dlstage-stage", OnTaskFailure::StopStep, StepProgram::Mpi).back() ==
               "--job-name=dlstage-stage");
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
    report.task_failures = {"n2: task 1: Killed", "n1: task 0: Terminated"};
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed on n2: the stager ended early (n2: task 1: Killed)"},
               boost::test_tools::per_element());
    report.outlived_others = true;  // srun --wait ended it
    const Lines outlived = staging_failure(staging.config, staging.step, report);
    BOOST_TEST(outlived ==
                   Lines{"staging imagenet:shm failed on n2: its stager still ran 300 s after the others had ended "
                         "(site.stall_timeout): it stopped, or the node froze or was cut off (n2: task 1: Killed)"},
               boost::test_tools::per_element());
    // The admin guide's watchdog section shows it word for word.
    BOOST_TEST(content_of(source_path("docs/admin-guide.md")).find("\ndlstage: " + outlived.front() + "\n") !=
               std::string::npos);
    report.outlived_others = false;
    staging.record_failure("n2", "no room");
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines({"no room", "staging imagenet:shm failed; see the messages above"}),
               boost::test_tools::per_element());
    report.stager_explained = true;  // the record would say it twice
    BOOST_TEST(staging_failure(staging.config, staging.step, report) ==
                   Lines{"staging imagenet:shm failed; see the messages above"},
               boost::test_tools::per_element());
}

namespace {
// Sets variables for one test and restores what was there.
class Environment {
public:
    ~Environment()
    {
        for (const auto& [name, value] : saved_)
            value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
    }
    void set(const std::string& name, const char* value)
    {
        if (!saved_.count(name)) {
            const char* old = std::getenv(name.c_str());
            saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
        }
        value ? ::setenv(name.c_str(), value, 1) : ::unsetenv(name.c_str());
    }

private:
    std::map<std::string, std::optional<std::string>> saved_;
};
}  // namespace

BOOST_AUTO_TEST_CASE(the_step_comes_from_the_jobs_environment_checked)
{
    Environment env;
    for (const char* name :
         {"SLURM_JOB_ID", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", "DLSTAGE_STAGE_DATA", "DLSTAGE_WINDOW",
          "DLSTAGE_CHUNK_SIZE", "DLSTAGE_READERS", "DLSTAGE_WRITERS", "DLSTAGE_RATE_LIMIT", "DLSTAGE_PROGRESS",
          "DLSTAGE_EXCHANGE", "DLSTAGE_OPENS", "SLURM_SPANK_OPTION_dlstage_stage_data"})
        env.set(name, nullptr);
    BOOST_TEST(!inside_job());
    env.set("SLURM_JOB_ID", "0042");
    BOOST_TEST(!inside_job());
    env.set("SLURM_NNODES", "3");  // older Slurm
    BOOST_TEST(inside_job());
    env.set("SLURM_SPANK_OPTION_dlstage_stage_data", "imagenet:shm");  // a salloc shell
    env.set("DLSTAGE_WINDOW", "8");
    StagerStep step = stager_step_from_environment({});
    BOOST_TEST(step.job_id == "42");
    BOOST_TEST(step.nodes == "3");
    BOOST_TEST(step.spec == "imagenet:shm");
    BOOST_TEST(step.tuning == Lines({"--window", "8"}), boost::test_tools::per_element());
    BOOST_TEST(step.config_path.empty());

    env.set("SLURM_JOB_NUM_NODES", "2");
    env.set("DLSTAGE_STAGE_DATA", "coco");  // from the plugin: first
    step = stager_step_from_environment({});
    BOOST_TEST(step.nodes == "2");
    BOOST_TEST(step.spec == "coco");
    BOOST_TEST(stager_step_from_environment({"a", "b:nvme"}).spec == "a,b:nvme");

    env.set("DLSTAGE_WINDOW", "8x");
    BOOST_TEST(test::error_of([] { stager_step_from_environment({}); }).rfind("DLSTAGE_WINDOW: ", 0) == 0u);
    env.set("DLSTAGE_WINDOW", nullptr);
    env.set("SLURM_JOB_ID", "-1");
    BOOST_TEST(test::error_of([] { stager_step_from_environment({}); }).rfind("SLURM_JOB_ID: ", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(the_stager_is_found_under_the_prefix_dlstage_runs_from)
{
    const std::string bindir = "/usr/bin", libexec = "/usr/libexec/dlstage";
    BOOST_TEST(helper_program_path("/usr/bin", bindir, libexec, "dlstage-stager") ==
               "/usr/libexec/dlstage/dlstage-stager");
    // A DESTDIR install (the test cluster's) finds its own stager, not the system's.
    BOOST_TEST(helper_program_path("/tmp/c/inst/usr/bin", bindir, libexec, "dlstage-stager") ==
               "/tmp/c/inst/usr/libexec/dlstage/dlstage-stager");
    // A build tree: side by side.
    BOOST_TEST(helper_program_path("/src/dlstage/_build", bindir, libexec, "dlstage-stager") ==
               "/src/dlstage/_build/dlstage-stager");
    BOOST_TEST(helper_program_path("/opt/usr/bin2", bindir, libexec, "x") == "/opt/usr/bin2/x");
    BOOST_TEST(helper_program_path("/usr/bin", "", libexec, "x") == "/usr/bin/x");
    BOOST_TEST(helper_program_path("/usr/bin", bindir, "", "x") == "/usr/bin/x");
}

BOOST_AUTO_TEST_CASE(a_staging_cut_by_the_time_limit_says_so_and_names_the_copies_kept)
{
    BOOST_TEST(says_time_limit("slurmstepd-n1: error: *** STEP 187.0 ON n1 CANCELLED AT 2026-12-02T20:09:02 DUE TO "
                               "TIME LIMIT ***"));
    BOOST_TEST(!says_time_limit("slurmstepd-n1: error: *** STEP 187.0 ON n1 CANCELLED AT 2026-12-02T20:09:02 ***"));
    BOOST_TEST(!says_time_limit("dlstage: big: *** STEP 1.0 DUE TO TIME LIMIT ***"));  // not Slurm's
    StageItem kept;
    kept.dataset.name = "big";
    kept.tier.name = "scratch";
    kept.tier.scope = Scope::Shared;
    StageItem gone;
    gone.dataset.name = "tree";
    gone.tier.name = "shm";
    BOOST_TEST(cut_by_time_limit({kept, gone}) ==
               "staging was cut off by this job's time limit: ask for more time (--time); what it copied of big "
               "in scratch is kept, and the next staging goes on from it");
    BOOST_TEST(cut_by_time_limit({gone}) == "staging was cut off by this job's time limit: ask for more time (--time)");
}

BOOST_AUTO_TEST_SUITE_END()
