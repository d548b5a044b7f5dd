// status/status_query: which rows `dlstage status` shows and in which
// order, from records in a temporary state_dir.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "job/state_record.hpp"
#include "status/status_query.hpp"
#include "tests/unit/support/slurm_says.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using test::slurm_says;

namespace {
void make_job(const test::TempDir& state, const std::string& job)
{
    mkdir((state / "jobs").c_str(), 0755);
    mkdir(job_state_dir(state.path(), job).c_str(), 0755);
    mkdir(job_user_dir(state.path(), job).c_str(), 0700);
}

void stage(const test::TempDir& state, const std::string& job, const std::string& dataset, const std::string& what)
{
    make_job(state, job);
    write_record(progress_record_path(state.path(), job, dataset), toml::table{{"dataset", dataset},
                                                                               {"tier", "shm"},
                                                                               {"state", what},
                                                                               {"nodes", 1},
                                                                               {"bytes_total", 10},
                                                                               {"bytes_done", what == "ready" ? 10 : 5},
                                                                               {"time", 1700000000}});
}

// "JOB DATASET" per row, in order.
std::string listing(const std::vector<StatusRow>& rows)
{
    std::string text;
    for (const StatusRow& row : rows)
        text += row.shown_id() + " " + row.dataset + "\n";
    return text;
}

std::vector<JobSelector> selectors(const std::string& list)
{
    return parse_job_list(list);
}
}  // namespace

BOOST_AUTO_TEST_SUITE(status_query)

BOOST_AUTO_TEST_CASE(rows_as_squeue_lists_jobs_array_tasks_under_their_array)
{
    test::TempDir state;
    stage(state, "10", "coco", "staging");
    stage(state, "10", "alpha", "ready");
    stage(state, "9", "coco", "ready");
    stage(state, "125", "coco", "staging");  // task 2 of array 123
    stage(state, "124", "coco", "staging");  // task 10 of array 123
    const SlurmJobs slurm = slurm_says("9|N/A|N/A|RUNNING|n1\n10|N/A|N/A|RUNNING|n1\n"
                                       "124|123|10|RUNNING|n1\n125|123|2|RUNNING|n1\n");
    BOOST_TEST(listing(find_status_rows(state.path(), {}, slurm)) ==
               "9 coco\n10 alpha\n10 coco\n123_2 coco\n123_10 coco\n");
}

BOOST_AUTO_TEST_CASE(states_dataset_and_jobs_narrow_the_rows)
{
    test::TempDir state;
    stage(state, "10", "coco", "staging");
    stage(state, "10", "alpha", "ready");
    stage(state, "11", "coco", "ready");
    const SlurmJobs slurm = slurm_says("10|N/A|N/A|RUNNING|n1\n11|N/A|N/A|RUNNING|n1\n");
    StatusQuery query;
    query.states = {StagingState::Ready};
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm)) == "10 alpha\n11 coco\n");
    query = {};
    query.dataset = "coco";
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm)) == "10 coco\n11 coco\n");
    query = {};
    query.jobs = selectors("11,77");
    const std::vector<StatusRow> rows = find_status_rows(state.path(), query, slurm);
    BOOST_TEST(listing(rows) == "11 coco\n");
    BOOST_TEST(unmatched(query.jobs, rows) == std::vector<std::string>({"77"}));
    // An array's id names its tasks, whose own ids are others.
    query.jobs = selectors("123");
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm_says("11|123|1|RUNNING|n1\n"))) == "123_1 coco\n");
}

BOOST_AUTO_TEST_CASE(another_users_rows_only_when_asked_for)
{
    if (geteuid() != 0)
        return;  // only root's outcome records name another user
    test::TempDir state;
    stage(state, "10", "coco", "ready");
    toml::table prolog{{"node", "n1"}, {"status", "ready"}, {"user", "bob"}, {"uid", 4242}, {"time", 1700000000}};
    write_user_outcome(state.path(), "10", prolog_outcome_name("n1"), prolog);
    const SlurmJobs slurm = slurm_says("10|N/A|N/A|RUNNING|n1\n");
    StatusQuery query;
    BOOST_TEST(find_status_rows(state.path(), query, slurm).empty());
    query.all = true;
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm)) == "10 coco\n");
    query = {};
    query.users = {"bob"};
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm)) == "10 coco\n");
    query = {};
    query.jobs = selectors("10");
    BOOST_TEST(listing(find_status_rows(state.path(), query, slurm)) == "10 coco\n");
}

BOOST_AUTO_TEST_SUITE_END()
