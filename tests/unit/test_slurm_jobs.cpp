// lib/slurm_jobs: gc's one question to Slurm, with squeue stand-ins on
// PATH for the answers a real squeue gives (the real one is asked in
// tests/integration/52-gc.bats).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <sys/stat.h>

#include "lib/slurm_jobs.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;

namespace {
// PATH set to a directory whose squeue is `script`, for one scope.
struct FakeSqueue {
    test::TempDir dir;
    std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    explicit FakeSqueue(const std::string& script)
    {
        const std::string squeue = dir.write("squeue", "#!/bin/sh\n" + script + "\n");
        ::chmod(squeue.c_str(), 0755);
        ::setenv("PATH", (dir.path() + ":" + old_path).c_str(), 1);
    }
    ~FakeSqueue() { ::setenv("PATH", old_path.c_str(), 1); }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(slurm_jobs)

BOOST_AUTO_TEST_CASE(the_answer_is_job_ids_and_states_or_nothing)
{
    const auto states = parse_squeue("12 RUNNING\n13 COMPLETED\n\n4294967294 PENDING\n");
    BOOST_REQUIRE(states);
    BOOST_TEST(states->size() == 3u);
    BOOST_TEST(states->at("13") == "COMPLETED");
    for (const char* bad : {"12\n", "12 RUNNING extra\n", "1_2 RUNNING\n", "x RUNNING\n", "12 RUNNING\nslurm_load_jobs error\n"})
        BOOST_TEST(!parse_squeue(bad), bad);
    BOOST_TEST(parse_squeue("")->empty());
}

BOOST_AUTO_TEST_CASE(every_job_in_every_state_is_asked_for)
{
    const auto argv = squeue_command(30);
    BOOST_TEST(argv.front() == "timeout");
    BOOST_TEST(std::count(argv.begin(), argv.end(), "--states=all") == 1);
    BOOST_TEST(std::count(argv.begin(), argv.end(), "--format=%A %T") == 1);
}

BOOST_AUTO_TEST_CASE(squeue_answering_gives_the_states)
{
    FakeSqueue squeue("echo '5 RUNNING'; echo '6 COMPLETING'");
    const SlurmJobs jobs = ask_slurm_jobs(10);
    BOOST_TEST(jobs.problem == "");
    BOOST_TEST(jobs.states.size() == 2u);
    BOOST_TEST(jobs.asked_at > 0);
}

BOOST_AUTO_TEST_CASE(squeue_failing_or_hanging_is_a_problem_never_an_empty_list)
{
    {
        FakeSqueue squeue("echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
        const SlurmJobs jobs = ask_slurm_jobs(10);
        BOOST_TEST(jobs.problem == "squeue exited with status 1: squeue: error: Unable to contact slurm controller");
    }
    {
        FakeSqueue squeue("exec sleep 30");
        const SlurmJobs jobs = ask_slurm_jobs(1);
        BOOST_TEST(jobs.problem == "squeue did not answer within 1 s (slurmctld down?)");
    }
    {
        FakeSqueue squeue("echo '5 RUNNING'; echo 'garbage'");
        BOOST_TEST(ask_slurm_jobs(10).problem.find("is not lines of 'JOBID STATE'") != std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
