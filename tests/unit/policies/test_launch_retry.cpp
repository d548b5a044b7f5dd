#include <boost/test/unit_test.hpp>

#include "policies/launch_retry.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(launch_retry)

BOOST_AUTO_TEST_CASE(a_silent_crash_at_start_is_tried_once_more)
{
    const Verdict v = retry_launch({1, false, {"n2: task 1: Segmentation fault (core dumped)"}});
    BOOST_TEST(v.allowed);
    BOOST_TEST(v.reason == "the stager crashed while starting (n2: task 1: Segmentation fault (core dumped)) "
                           "before it staged anything; launching it once more");
    BOOST_TEST(retry_launch({1, false, {"n1: task 0: Aborted"}}).allowed);
}

BOOST_AUTO_TEST_CASE(a_crash_counts_whichever_task_srun_named_first)
{
    // The connection to the crashed rank broke: a peer exited, and srun
    // said so before the crash.
    const Verdict v = retry_launch(
        {1, false, {"n1: task 0: Exited with exit code 1", "n3: task 2: Segmentation fault (core dumped)"}});
    BOOST_TEST(v.allowed);
    BOOST_TEST(v.reason.find("(n3: task 2: Segmentation fault (core dumped))") != std::string::npos);
    BOOST_TEST(retry_launch({1, false, {"n2: task 1: Terminated", "n3: task 2: Bus error"}}).allowed);
}

BOOST_AUTO_TEST_CASE(up_to_the_most_launches_and_never_when_the_stager_said_why_or_was_stopped)
{
    BOOST_TEST(retry_launch({kMostLaunches - 1, false, {"n2: task 1: Segmentation fault"}}).allowed);
    const Verdict last = retry_launch({kMostLaunches, false, {"n2: task 1: Segmentation fault"}});
    BOOST_TEST(!last.allowed);
    BOOST_TEST(last.reason == "the stager failed 3 times");
    BOOST_TEST(!retry_launch({1, true, {"n2: task 1: Segmentation fault"}}).allowed);
    BOOST_TEST(!retry_launch({1, false, {"n2: task 1: Killed"}}).allowed);
    BOOST_TEST(!retry_launch({1, false, {"n2: task 1: Terminated", "n1: task 0: Killed"}}).allowed);
    BOOST_TEST(!retry_launch({1, false, {"n2: task 1: Exited with exit code 1"}}).allowed);
    BOOST_TEST(!retry_launch({1, false, {}}).allowed);
}

BOOST_AUTO_TEST_SUITE_END()
