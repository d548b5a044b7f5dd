#include <boost/test/unit_test.hpp>

#include <sstream>
#include <sys/stat.h>

#include "job/slurm_jobs.hpp"
#include "job/state_record.hpp"
#include "lib/error.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "status/job_status.hpp"
#include "status/status_format.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/slurm_says.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using test::error_of;
using test::slurm_says;

BOOST_AUTO_TEST_SUITE(job_status)

BOOST_AUTO_TEST_CASE(time_as_squeue_prints_it)
{
    BOOST_TEST(elapsed_text(0) == "0:00");
    BOOST_TEST(elapsed_text(5) == "0:05");
    BOOST_TEST(elapsed_text(754) == "12:34");
    BOOST_TEST(elapsed_text(3723) == "1:02:03");
    BOOST_TEST(elapsed_text(86399) == "23:59:59");
    BOOST_TEST(elapsed_text(2 * 86400 + 3 * 3600 + 4 * 60 + 5) == "2-03:04:05");
    BOOST_TEST(elapsed_text(-7) == "0:00");
}

BOOST_AUTO_TEST_CASE(sizes_as_slurm_prints_memory)
{
    BOOST_TEST(slurm_size(0) == "0");
    BOOST_TEST(slurm_size(512) == "512");
    BOOST_TEST(slurm_size(1024) == "1K");
    BOOST_TEST(slurm_size(512ULL << 20) == "512M");
    BOOST_TEST(slurm_size(150ULL << 30) == "150G");
    BOOST_TEST(slurm_size(3ULL << 29) == "1.50G");
    BOOST_TEST(slurm_size(1023ULL << 20) == "1023M");
    BOOST_TEST(slurm_size(UINT64_MAX) == "16.00E");
}

BOOST_AUTO_TEST_CASE(squeue_output_parsed)
{
    BOOST_TEST(!parse_squeue("124|123|4|RUNNING|n1\nnonsense\n"));  // a partial answer is none
    SlurmJobs jobs;
    jobs.jobs = parse_squeue("124|123|4|RUNNING|n[1-3]\n125|N/A|N/A|PENDING|\n126|126|N/A|COMPLETED|n1\n").value();
    BOOST_TEST(jobs.jobs.size() == 3u);
    BOOST_REQUIRE(jobs.find("124"));
    BOOST_TEST(jobs.find("124")->array_job_id == "123");
    BOOST_TEST(jobs.find("124")->array_task_id == "4");
    BOOST_TEST(jobs.find("124")->nodelist == "n[1-3]");
    BOOST_TEST(jobs.find("125")->array_job_id.empty());
    BOOST_TEST(jobs.find("126")->array_job_id.empty());  // no task id: not an array task
    BOOST_TEST(!jobs.find("127"));
}

namespace {
SlurmJobs slurm_silent()
{
    SlurmJobs none;
    none.problem = "squeue is not on PATH";
    return none;
}

toml::table progress(const std::string& dataset, const std::string& state, std::int64_t done, std::int64_t total)
{
    return toml::table{{"dataset", dataset},       {"tier", "shm"},      {"state", state},    {"nodes", 3},
                       {"bytes_total", total},     {"bytes_done", done}, {"files_total", 10}, {"elapsed_s", 75.0},
                       {"bytes_per_s", 1048576.0}, {"eta_s", 30.0},      {"time", 1700000000}};
}

toml::table outcome(const std::string& node, const std::string& status, const std::string& message = "")
{
    return toml::table{{"node", node},    {"status", status}, {"message", message},
                       {"user", "alice"}, {"uid", 1234},      {"time", 1700000100}};
}

JobRecords job(const std::string& id)
{
    JobRecords j;
    j.job_id = id;
    return j;
}

StatusRow only_row(const JobRecords& j, const SlurmJobs& slurm)
{
    const std::vector<StatusRow> rows = status_rows(j, slurm);
    BOOST_REQUIRE(rows.size() == 1u);
    return rows.front();
}
}  // namespace

BOOST_AUTO_TEST_CASE(state_from_records_while_the_job_runs)
{
    const SlurmJobs running = slurm_says("7|N/A|N/A|RUNNING|n[1-3]\n");
    JobRecords j = job("7");
    j.progress.push_back(progress("imagenet", "staging", 25, 100));
    StatusRow row = only_row(j, running);
    BOOST_TEST(state_word(row.state) == std::string("staging"));
    BOOST_TEST(row.percent() == 25);
    BOOST_TEST(row.nodelist == "n[1-3]");
    BOOST_TEST(row.reason.empty());

    j.progress[0] = progress("imagenet", "ready", 100, 100);
    BOOST_TEST(state_word(only_row(j, running).state) == std::string("ready"));
    j.progress[0] = progress("imagenet", "reused", 100, 100);
    BOOST_TEST(state_word(only_row(j, running).state) == std::string("reused"));
    j.progress[0] = progress("imagenet", "cache-hit", 100, 100);
    BOOST_TEST(state_word(only_row(j, running).state) == std::string("cache-hit"));
    j.progress[0] = progress("imagenet", "teleported", 100, 100);
    row = only_row(j, running);
    BOOST_TEST(state_word(row.state) == std::string("unknown"));
    BOOST_TEST(row.reason == "the record says 'teleported'");
}

BOOST_AUTO_TEST_CASE(where_the_job_found_its_data)
{
    const SlurmJobs running = slurm_says("7|N/A|N/A|RUNNING|n[1-3]\n");
    JobRecords j = job("7");
    j.progress.push_back(progress("imagenet", "ready", 100, 100));
    StatusRow row = only_row(j, running);
    BOOST_TEST(row.cache_hits.empty());
    BOOST_TEST(cache_hit_line(row).empty());
    BOOST_TEST(format_line(parse_status_format("%H"), &row) == "-");

    toml::array hits{"n1", "n3", ""};  // a name left empty is none
    j.progress[0].insert("cache_hits", hits);
    row = only_row(j, running);
    BOOST_TEST(row.cache_hits == (std::vector<std::string>{"n1", "n3"}), boost::test_tools::per_element());
    BOOST_TEST(cache_hit_line(row) == "imagenet: cache hit on n1,n3 (2 of 3 nodes) for job 7");
    BOOST_TEST(format_line(parse_status_format("%H"), &row) == "n1,n3");
    const toml::table json = status_json({row}, running, "1.2.3", 1700000001);
    BOOST_TEST(json["jobs"][0]["cache_hits"][1].value_or(std::string()) == "n3");

    row.cache_hits = {"n2"};
    row.nodes = 1;
    BOOST_TEST(cache_hit_line(row) == "imagenet: cache hit on n2 for job 7");
    row.cache_hits.clear();
    for (int i = 1; i <= 10; ++i)
        row.cache_hits.push_back("n" + std::to_string(i));
    row.nodes = 12;
    BOOST_TEST(cache_hit_line(row) ==
               "imagenet: cache hit on n1,n2,n3,n4,n5,n6,n7,n8 and 2 more (10 of 12 nodes) for job 7");
}

BOOST_AUTO_TEST_CASE(pending_from_the_prologs_plan_failed_with_the_reason)
{
    const SlurmJobs running = slurm_says("8|N/A|N/A|RUNNING|n1\n");
    JobRecords j = job("8");
    toml::table prolog = outcome("n1", "ready");
    prolog.insert("datasets", toml::array{toml::table{{"name", "coco"}, {"tier", "ssd"}}});
    j.prologs.push_back(prolog);
    StatusRow row = only_row(j, running);
    BOOST_TEST(row.dataset == "coco");
    BOOST_TEST(row.tier == "ssd");
    BOOST_TEST(state_word(row.state) == std::string("pending"));
    BOOST_TEST(row.user == "alice");
    BOOST_TEST(*row.uid == 1234);

    j.failures.push_back(toml::table{{"node", "n1"}, {"message", "no room"}});
    row = only_row(j, running);
    BOOST_TEST(state_word(row.state) == std::string("failed"));
    BOOST_TEST(row.reason == "n1: no room");

    j.failures.clear();
    j.prologs.push_back(outcome("n2", "failed", "tier 'ssd' is full on n2"));
    row = only_row(j, running);
    BOOST_TEST(state_word(row.state) == std::string("failed"));
    BOOST_TEST(row.reason == "prolog on n2: tier 'ssd' is full on n2");
}

BOOST_AUTO_TEST_CASE(cleaned_after_the_epilog_stale_when_gone_unknown_without_slurm)
{
    JobRecords j = job("9");
    j.progress.push_back(progress("imagenet", "ready", 100, 100));
    const SlurmJobs gone = slurm_says("1|N/A|N/A|RUNNING|n1\n");
    StatusRow row = only_row(j, gone);
    BOOST_TEST(state_word(row.state) == std::string("stale"));
    BOOST_TEST(row.reason == "Slurm no longer knows the job; no epilog record");
    row = only_row(j, slurm_says("9|N/A|N/A|CANCELLED|n1\n"));
    BOOST_TEST(state_word(row.state) == std::string("stale"));
    BOOST_TEST(row.reason == "the job ended (CANCELLED); no epilog record");
    row = only_row(j, slurm_silent());
    BOOST_TEST(state_word(row.state) == std::string("unknown"));
    BOOST_TEST(row.reason == "cannot ask Slurm (squeue is not on PATH); the records say ready");

    // A node's failure after the data was ready (its squashfuse died): the state stays, the reason tells.
    JobRecords broke = j;
    broke.failures.push_back(toml::table{{"node", "n2"}, {"message", "the squashfuse serving imagenet on n2 ended"}});
    row = only_row(broke, slurm_says("9|N/A|N/A|RUNNING|n1\n"));
    BOOST_TEST(state_word(row.state) == std::string("ready"));
    BOOST_TEST(row.reason == "n2: the squashfuse serving imagenet on n2 ended");

    j.epilogs.push_back(outcome("n1", "cleaned"));
    for (const SlurmJobs& slurm : {gone, slurm_silent()}) {
        row = only_row(j, slurm);
        BOOST_TEST(state_word(row.state) == std::string("cleaned"));
        BOOST_TEST(row.reason.empty());
    }
    // An epilog older than its node's prolog is an earlier run's (requeued, or the id given again).
    JobRecords again = j;
    toml::table prolog = outcome("n1", "ready");
    prolog.insert_or_assign("time", 1700000200);
    again.prologs.push_back(prolog);
    BOOST_TEST(state_word(only_row(again, slurm_says("9|N/A|N/A|RUNNING|n1\n")).state) == std::string("ready"));
    j.epilogs.push_back(outcome("n2", "incomplete", ""));
    BOOST_TEST(only_row(j, gone).reason == "epilog on n2: incomplete");
    // A failure stays the news after the epilog.
    j.failures.push_back(toml::table{{"node", "n2"}, {"message", "killed"}});
    j.progress[0] = progress("imagenet", "staging", 5, 100);
    BOOST_TEST(state_word(only_row(j, gone).state) == std::string("failed"));
}

BOOST_AUTO_TEST_CASE(array_tasks_and_job_lists)
{
    JobRecords j = job("124");
    j.progress.push_back(progress("imagenet", "staging", 1, 2));
    const StatusRow row = only_row(j, slurm_says("124|123|4|RUNNING|n1\n"));
    BOOST_TEST(row.shown_id() == "123_4");
    const auto selects = [&](const std::string& list) {
        for (const JobSelector& s : parse_job_list(list))
            if (s.matches(row))
                return true;
        return false;
    };
    BOOST_TEST(selects("123"));
    BOOST_TEST(selects("124"));
    BOOST_TEST(selects("123_4"));
    BOOST_TEST(selects("9,0123_4"));
    BOOST_TEST(!selects("123_5"));
    BOOST_TEST(!selects("12"));
    // The prolog's record keeps the ids once Slurm forgot the job.
    JobRecords forgotten = job("124");
    toml::table prolog = outcome("n1", "ready");
    prolog.insert("array_job_id", "123");
    prolog.insert("array_task_id", "4");
    forgotten.prologs.push_back(prolog);
    BOOST_TEST(only_row(forgotten, slurm_says("")).shown_id() == "123_4");
    for (const char* bad : {"", "x", "12_", "_3", "12_x", "-1", "0", "1,,2"})
        BOOST_TEST(error_of([&] { parse_job_list(bad); }).find("is not a job id") != std::string::npos, bad);
}

BOOST_AUTO_TEST_CASE(format_as_squeue_o)
{
    StatusRow row;
    row.job_id = "42";
    row.user = "alice";
    row.dataset = "imagenet";
    row.state = StagingState::Staging;
    row.bytes_total = 150ULL << 30;
    row.bytes_done = 75ULL << 30;
    row.elapsed_s = 3723;
    const auto items = parse_status_format("%.6i|%8u|%8d|%T %p %z %M%%");
    BOOST_TEST(format_line(items, nullptr) == " JOBID|USER    |DATASET |STATE DONE SIZE TIME%");
    BOOST_TEST(format_line(items, &row) == "    42|alice   |imagenet|staging 50% 150G 1:02:03%");
    // A cell longer than its width is cut, as squeue does.
    BOOST_TEST(format_line(parse_status_format("%3d"), &row) == "ima");
    BOOST_TEST(format_cells(parse_status_format(kDefaultStatusFormat), nullptr).size() == 12u);
    BOOST_TEST(error_of([] { parse_status_format("%i %q"); }).find("unknown field %q (known: %i %A") !=
               std::string::npos);
    BOOST_TEST(error_of([] { parse_status_format("%i %.8"); }).find("without a field letter") != std::string::npos);
    row.reason = "n1: no room";
    BOOST_TEST(format_line(parse_status_format("%R"), &row) == "(n1: no room)");
}

BOOST_AUTO_TEST_CASE(json_shape_ids_as_numbers)
{
    StatusRow row;
    row.job_id = "124";
    row.array_job_id = "123";
    row.array_task_id = "4";
    row.uid = 1234;
    row.bytes_total = 100;
    row.bytes_done = 50;
    row.updated = 1700000000;
    const toml::table json = status_json({row}, slurm_silent(), "1.2.3", 1700000001);
    BOOST_TEST(json["meta"]["dlstage"]["version"].value_or(std::string()) == "1.2.3");
    BOOST_TEST(json["meta"]["time"].value_or(0) == 1700000001);
    BOOST_TEST(!json["meta"]["slurm"]["asked"].value_or(true));
    const toml::table* first = json["jobs"][0].as_table();
    BOOST_REQUIRE(first);
    BOOST_TEST(first->get_as<std::int64_t>("job_id")->get() == 124);
    BOOST_TEST(first->get_as<std::int64_t>("array_job_id")->get() == 123);
    BOOST_TEST(first->get_as<std::int64_t>("array_task_id")->get() == 4);
    BOOST_TEST(first->get_as<std::int64_t>("percent")->get() == 50);
    BOOST_TEST(first->get_as<std::string>("state")->get() == "pending");
    std::ostringstream text;
    text << toml::json_formatter{json};
    BOOST_TEST(text.str().find("124") != std::string::npos);
    BOOST_TEST(text.str().find("\"124\"") == std::string::npos);  // a number, not a string
}

BOOST_AUTO_TEST_CASE(root_outcomes_count_the_users_copies_do_not)
{
    test::TempDir state;
    mkdir((state / "jobs").c_str(), 0755);
    mkdir(job_state_dir(state.path(), "5").c_str(), 0755);
    mkdir(job_user_dir(state.path(), "5").c_str(), 0700);
    write_user_outcome(state.path(), "5", epilog_outcome_name("n1"), outcome("n1", "cleaned"));
    const JobRecords records = read_job_records(state.path(), "5");
    if (geteuid() == 0) {
        BOOST_TEST(records.epilogs.size() == 1u);
        BOOST_TEST(state_word(only_row(records, slurm_says("")).state) == std::string("cleaned"));
    } else {
        BOOST_TEST(records.epilogs.empty());  // not root's: not the epilog's word
    }
}

BOOST_AUTO_TEST_SUITE_END()
