// job/slurm_jobs: gc's one question to Slurm, with squeue stand-ins on
// PATH for the answers a real squeue gives (the real one is asked in
// tests/integration/52-gc.bats).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <set>
#include <sys/stat.h>
#include <utility>

#include "job/slurm_jobs.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
// What scontrol listpids says on a node that runs no job step.
const char* const kNoSteps =
    "echo 'PID      JOBID    STEPID   LOCALID GLOBALID'; echo 'No job steps exist on this node.'; exit 1";

// PATH set to a directory whose squeue and scontrol are these scripts, for one scope.
struct FakeSqueue {
    test::TempDir dir;
    std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    explicit FakeSqueue(const std::string& squeue, const std::string& scontrol = kNoSteps)
    {
        for (const auto& [name, script] : {std::pair{"squeue", squeue}, {"scontrol", scontrol}}) {
            const std::string program = dir.write(name, "#!/bin/sh\n" + script + "\n");
            ::chmod(program.c_str(), 0755);
        }
        ::setenv("PATH", (dir.path() + ":" + old_path).c_str(), 1);
    }
    ~FakeSqueue() { ::setenv("PATH", old_path.c_str(), 1); }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(slurm_jobs)

BOOST_AUTO_TEST_CASE(the_answer_is_job_ids_and_states_or_nothing)
{
    const auto jobs =
        parse_squeue("12|N/A|N/A|RUNNING|n1\n13|N/A|N/A|COMPLETED|n[1-2]\n\n4294967294|N/A|N/A|PENDING|\n");
    BOOST_REQUIRE(jobs);
    BOOST_TEST(jobs->size() == 3u);
    BOOST_TEST(jobs->at("13").state == "COMPLETED");
    for (const char* bad :
         {"12\n", "12|N/A|N/A|RUNNING|n1|extra\n", "1_2|N/A|N/A|RUNNING|n1\n", "x|N/A|N/A|RUNNING|n1\n",
          "12|N/A|N/A||n1\n", "12|N/A|N/A|RUNNING|n1\nslurm_load_jobs error\n"})
        BOOST_TEST(!parse_squeue(bad), bad);
    BOOST_TEST(parse_squeue("")->empty());
}

BOOST_AUTO_TEST_CASE(every_job_in_every_state_is_asked_for)
{
    const auto argv = squeue_command(30);
    BOOST_TEST(argv.front() == "timeout");
    BOOST_TEST(std::count(argv.begin(), argv.end(), "--states=all") == 1);
    BOOST_TEST(std::count(argv.begin(), argv.end(), "--format=%A|%F|%K|%T|%N") == 1);
}

BOOST_AUTO_TEST_CASE(squeue_answering_gives_the_states)
{
    FakeSqueue squeue("echo '5|N/A|N/A|RUNNING|n1'; echo '6|N/A|N/A|COMPLETING|n2'");
    const SlurmJobs jobs = ask_slurm(10, true);
    BOOST_TEST(jobs.asked);
    BOOST_TEST(jobs.problem == "");
    BOOST_TEST(jobs.jobs.size() == 2u);
    BOOST_TEST(jobs.here.empty());  // no job step on this node
    BOOST_TEST(jobs.asked_at > 0);
}

BOOST_AUTO_TEST_CASE(the_jobs_with_processes_on_this_node_come_from_listpids)
{
    const auto here = parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\n"
                                     "10870    8        batch    0       0\n"
                                     "10871    8        batch    -       -\n"
                                     "10990    12       0        0       0\n");
    BOOST_REQUIRE(here);
    BOOST_TEST((*here == std::set<std::string>{"8", "12"}));
    BOOST_TEST(!parse_listpids("10870 8 batch 0 0\n"));  // no header
    BOOST_TEST(!parse_listpids("PID JOBID STEPID\n10870 x batch\n"));
    FakeSqueue slurm("echo '8|N/A|N/A|COMPLETED|n1'",
                     "echo 'PID JOBID STEPID LOCALID GLOBALID'; echo '77 8 batch 0 0'");
    const SlurmJobs jobs = ask_slurm(10, true);
    BOOST_TEST(jobs.problem == "");
    BOOST_TEST(jobs.here.count("8") == 1u);
}

BOOST_AUTO_TEST_CASE(listpids_failing_is_a_problem_too)
{
    FakeSqueue slurm("echo '8|N/A|N/A|COMPLETED|n1'", "echo 'scontrol: error: slurmd is not responding' >&2; exit 1");
    BOOST_TEST(!ask_slurm(10, true).asked);
    BOOST_TEST(ask_slurm(10, false).asked);  // status does not ask listpids
    BOOST_TEST(ask_slurm(10, true).problem ==
               "scontrol listpids exited with status 1: scontrol: error: slurmd is not responding");
}

BOOST_AUTO_TEST_CASE(squeue_failing_or_hanging_is_a_problem_never_an_empty_list)
{
    {
        FakeSqueue squeue("echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
        const SlurmJobs jobs = ask_slurm(10);
        BOOST_TEST(!jobs.asked);
        BOOST_TEST(jobs.problem == "squeue exited with status 1: squeue: error: Unable to contact slurm controller");
    }
    {
        FakeSqueue squeue("exec sleep 30");
        const SlurmJobs jobs = ask_slurm(1);
        BOOST_TEST(jobs.problem == "squeue did not answer within 1 s (slurmctld or slurmd down?)");
    }
    {
        FakeSqueue squeue("echo '5|N/A|N/A|RUNNING|n1'; echo 'garbage'");
        const SlurmJobs jobs = ask_slurm(10);
        BOOST_TEST(!jobs.asked);
        BOOST_TEST(jobs.problem.find("is not lines of '%A|%F|%K|%T|%N'") != std::string::npos, jobs.problem);
    }
}

BOOST_AUTO_TEST_CASE(squeue_tells_each_known_jobs_state_and_reason)
{
    const auto states = parse_job_states("7|PENDING|JobHeldAdmin\n9|CANCELLED|None\nnot|a|job\n12|RUNNING\n");
    BOOST_TEST(states.size() == 2U);
    BOOST_TEST(states.at("7").state == "PENDING");
    BOOST_TEST(states.at("7").reason == "JobHeldAdmin");
    BOOST_TEST(states.at("9").state == "CANCELLED");
    BOOST_TEST(parse_job_states("").empty());
}


BOOST_AUTO_TEST_CASE(squeue_durations_are_read_in_seconds_or_not_at_all)
{
    BOOST_TEST(*parse_slurm_duration("0:05") == 5);
    BOOST_TEST(*parse_slurm_duration("9:45") == 585);
    BOOST_TEST(*parse_slurm_duration("1:02:03") == 3723);
    BOOST_TEST(*parse_slurm_duration("2-00:00:10") == 2 * 86400 + 10);
    BOOST_TEST(*parse_slurm_duration("-0:05") == -5);
    for (const char* bad : {"UNLIMITED", "NOT_SET", "INVALID", "", "5", "1-2:03", "a:00", "1:2:3:4", "-", "1--0:0:0"})
        BOOST_TEST(!parse_slurm_duration(bad), bad);
}

BOOST_AUTO_TEST_CASE(a_jobs_clock_is_asked_of_squeue_or_unknown)
{
    {
        FakeSqueue squeue(
            "test \"$2\" = --jobs=7 && test \"$3\" = '--format=%l|%L|%e|%T' && echo '10:00|9:15|Unknown|RUNNING'");
        const auto clock = ask_job_clock("7", 10);
        BOOST_TEST_REQUIRE(clock.has_value());
        BOOST_TEST(clock->left == 555);
    }
    FakeSqueue silent("echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1");
    BOOST_TEST(!ask_job_clock("7", 10).has_value());
}

BOOST_AUTO_TEST_CASE(squeue_times_are_read_as_local_time_or_not_at_all)
{
    const auto at = parse_slurm_time("2026-12-02T19:31:31");
    BOOST_TEST_REQUIRE(at.has_value());
    BOOST_TEST(*parse_slurm_time("2026-12-02T19:32:01") - *at == 30);
    const std::time_t t = static_cast<std::time_t>(*at);
    std::tm local{};
    localtime_r(&t, &local);
    BOOST_TEST(local.tm_hour == 19);
    BOOST_TEST(local.tm_min == 31);
    for (const char* bad : {"Unknown", "N/A", "NONE", "", "2026-12-02", "2026-12-02T19:31:31x"})
        BOOST_TEST(!parse_slurm_time(bad), bad);
}

BOOST_AUTO_TEST_CASE(a_jobs_clock_is_its_limit_and_the_time_left)
{
    const std::int64_t now = *parse_slurm_time("2026-12-02T19:30:00");
    const auto clock = job_clock_in("10:00|9:15|2026-12-02T19:39:15|RUNNING\n", now);
    BOOST_TEST_REQUIRE(clock.has_value());
    BOOST_TEST(clock->limit == 600);
    BOOST_TEST(clock->left == 555);
    BOOST_TEST(clock->state == "RUNNING");
    // An EndTime set by an admin: %L counts from the limit, rounded up to
    // whole minutes; the end time is what slurmctld ends the job by.
    BOOST_TEST(job_clock_in("2:00|1:57|2026-12-02T19:30:30|RUNNING", now)->left == 30);
    // Past its end, squeue may say INVALID.
    BOOST_TEST(job_clock_in("1:00|INVALID|2026-12-02T19:29:40|RUNNING", now)->left == -20);
    BOOST_TEST(job_clock_in("1:00|0:40|Unknown|RUNNING", now)->left == 40);
    BOOST_TEST(!job_clock_in("UNLIMITED|UNLIMITED|Unknown|RUNNING", now).has_value());
    BOOST_TEST(!job_clock_in("10:00|INVALID|Unknown|RUNNING", now).has_value());
    // Cancelled a moment ago: its end time is now, its state says why.
    BOOST_TEST(job_clock_in("10:00|9:58|2026-12-02T19:30:00|CANCELLED", now)->state == "CANCELLED");
    BOOST_TEST(!job_clock_in("10:00|9:15|2026-12-02T19:39:15", now).has_value());  // no state
    BOOST_TEST(!job_clock_in("", now).has_value());
    BOOST_TEST(!job_clock_in("slurm_load_jobs error: Invalid job id specified", now).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
