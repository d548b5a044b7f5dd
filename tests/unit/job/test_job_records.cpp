#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "job/job_records.hpp"
#include "job/state_record.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(job_records)

BOOST_AUTO_TEST_CASE(recorded_jobs_in_number_order_and_nothing_else)
{
    test::TempDir state;
    BOOST_TEST(recorded_job_ids(state.path()).empty());  // no jobs/ yet
    mkdir((state / "jobs").c_str(), 0755);
    for (const char* name : {"10", "9", "0042", "junk", "11"})
        mkdir((state / "jobs/" + name).c_str(), 0755);
    BOOST_TEST(recorded_job_ids(state.path()) == std::vector<std::string>({"9", "10", "11"}));
}

BOOST_AUTO_TEST_CASE(a_jobs_progress_and_failures_are_read_together)
{
    test::TempDir state;
    BOOST_TEST(read_job_records(state.path(), "7").empty());
    mkdir((state / "jobs").c_str(), 0755);
    mkdir(job_state_dir(state.path(), "7").c_str(), 0755);
    mkdir(job_user_dir(state.path(), "7").c_str(), 0700);
    write_record(progress_record_path(state.path(), "7", "imagenet"), toml::table{{"dataset", "imagenet"}});
    write_record(failure_record_path(state.path(), "7", "n2"), toml::table{{"node", "n2"}});
    const JobRecords job = read_job_records(state.path(), "7");
    BOOST_TEST(job.job_id == "7");
    BOOST_REQUIRE(job.progress.size() == 1u);
    BOOST_TEST(job.progress[0]["dataset"].value_or(std::string()) == "imagenet");
    BOOST_REQUIRE(job.failures.size() == 1u);
    BOOST_TEST(job.failures[0]["node"].value_or(std::string()) == "n2");
}

BOOST_AUTO_TEST_SUITE_END()
