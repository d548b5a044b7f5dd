#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>

#include "lib/error.hpp"
#include "mover/mover_job.hpp"
#include "mover/mover_waits.hpp"

using namespace dlstage;
using namespace dlstage::mover;

namespace {
bool has(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

BOOST_AUTO_TEST_SUITE(mover_job)

BOOST_AUTO_TEST_CASE(the_mover_job_stages_the_dataset_to_its_via_tier_on_the_mover_partition)
{
    MoverSettings m;
    m.partition = "xfer";
    m.nodes = 2;
    m.time_limit = "2:00:00";
    Dataset d;
    d.name = "in21k";
    d.via = "scratch";
    const auto argv = mover_sbatch_argv(m, d, "/scratch/alice/.mover-in21k.out");
    BOOST_TEST(argv.front() == "sbatch");
    BOOST_TEST(has(argv, "--parsable"));
    BOOST_TEST(has(argv, "--job-name=dlstage-mover-in21k"));
    BOOST_TEST(has(argv, "--partition=xfer"));
    BOOST_TEST(has(argv, "--nodes=2"));
    BOOST_TEST(has(argv, "--time=2:00:00"));
    BOOST_TEST(has(argv, "--cpus-per-task=2"));  // the defaults
    BOOST_TEST(has(argv, "--mem=4G"));
    BOOST_TEST(has(argv, "--stage-data=in21k:scratch"));
    BOOST_TEST(has(argv, "--output=/scratch/alice/.mover-in21k.out"));
    BOOST_TEST(
        std::none_of(argv.begin(), argv.end(), [](const std::string& a) { return a.rfind("--account", 0) == 0; }));
}

BOOST_AUTO_TEST_CASE(the_users_job_settings_do_not_reach_the_mover)
{
    const char* env[] = {"PATH=/usr/bin",
                         "SBATCH_PARTITION=gpu",
                         "SLURM_CONF=/etc/slurm/slurm.conf",
                         "SLURM_JOB_ID=12",
                         "SALLOC_ACCOUNT=x",
                         "SPANK_DLSTAGE_FACTS=y",
                         "DLSTAGE_RATE_LIMIT=1M",
                         nullptr};
    const auto kept = submit_environment(env);
    BOOST_TEST(kept == (std::vector<std::string>{"PATH=/usr/bin", "SLURM_CONF=/etc/slurm/slurm.conf",
                                                 "DLSTAGE_RATE_LIMIT=1M"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(jobs_waiting_for_a_mover_are_found_by_their_dependency)
{
    const std::string squeue = "20|afterok:7(unfulfilled)\n"
                               "21|afterany:3(unfulfilled),afterok:7(failed)\n"
                               "22|afterok:70(unfulfilled)\n"
                               "23|afternotok:7(unfulfilled)\n"
                               "24|(null)\n"
                               "25|afterok:5:7(unfulfilled)\n";
    BOOST_TEST(parse_waiting_jobs(squeue, "7") == (std::vector<std::string>{"20", "21", "25"}),
               boost::test_tools::per_element());
    BOOST_TEST(parse_job_ids("7\n12\n") == (std::vector<std::string>{"7", "12"}), boost::test_tools::per_element());
    BOOST_CHECK_THROW(parse_job_ids("slurm_load_jobs error: Socket timed out\n"), Error);
}

BOOST_AUTO_TEST_CASE(comments_tell_who_waits_and_why_a_mover_failed)
{
    const auto waits =
        parse_mover_waits("30|alice|PENDING|dlstage: waits for mover job 7 (in21k:shm), 9 (far:ssd)\n"
                          "31|bob|CANCELLED|dlstage: mover job 7 for in21k failed: cannot read x: a|b\n"
                          "32|carol|PENDING|my own | comment; dlstage: waits for mover job 8 (coco:shm)\n"
                          "33|dave|RUNNING|just a comment\n");
    BOOST_TEST_REQUIRE(waits.size() == 4u);
    BOOST_TEST(waits[0].job_id == "30");
    BOOST_TEST(waits[0].mover_id == "7");
    BOOST_TEST(waits[0].dataset == "in21k");
    BOOST_TEST(waits[0].tier == "shm");
    BOOST_TEST(waits[1].mover_id == "9");
    BOOST_TEST(waits[1].dataset == "far");
    BOOST_TEST(waits[2].user == "bob");
    BOOST_TEST(waits[2].failed);
    BOOST_TEST(waits[2].reason == "cannot read x: a|b");
    BOOST_TEST(waits[3].job_id == "32");
    BOOST_TEST(waits[3].mover_id == "8");
}

BOOST_AUTO_TEST_CASE(a_comment_that_forges_lines_shows_nothing_it_forged)
{
    // Job 40's owner set a comment with newlines: it forges a line for
    // alice's job 30 and one for a job that does not exist.
    const std::string answer =
        "30|alice|PENDING|dlstage: waits for mover job 7 (in21k:shm)\n"
        "40|mallory|PENDING|x\n30|alice|PENDING|dlstage: mover job 7 for in21k failed: \x1b[2Jcall 555\n"
        "99|alice|CANCELLED|dlstage: mover job 7 for in21k failed: forged\n"
        "41|mallory|PENDING|dlstage: mover job 8 for coco failed: \x1b[31mred\n";
    const std::set<std::string> known = {"30", "40", "41"};
    const auto waits = parse_mover_waits(answer, &known);
    BOOST_TEST_REQUIRE(waits.size() == 1u);  // 30 is on two lines, 99 is not Slurm's
    BOOST_TEST(waits[0].job_id == "41");
    BOOST_TEST(waits[0].reason.find('\x1b') == std::string::npos);
    BOOST_TEST(parse_mover_waits(answer).size() == 4u);  // unchecked: what the lines say
}

BOOST_AUTO_TEST_CASE(scontrol_tells_a_requeue_and_how_the_job_ends)
{
    const auto now =
        job_now_in("JobId=7 JobName=dlstage-mover-in21k UserId=alice(1000) JobState=TIMEOUT Reason=TimeLimit "
                   "Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1\n");
    BOOST_TEST_REQUIRE(now.has_value());
    BOOST_TEST(now->state == "TIMEOUT");
    BOOST_TEST(now->restarts == 2);
    BOOST_TEST(!job_now_in("slurm_load_jobs error: Invalid job id specified").has_value());
    BOOST_TEST(!job_now_in("JobId=7 JobState=RUNNING Restarts=x").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
