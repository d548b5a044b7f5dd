// Which Slurm job states are final (policies/slurm_states).
#include <boost/test/unit_test.hpp>

#include "policies/slurm_states.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(slurm_states)

BOOST_AUTO_TEST_CASE(ended_states_and_the_rest)
{
    for (const char* ended : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"})
        BOOST_TEST(slurm_state_has_ended(ended), ended);
    // A word this version does not know is a job that may still hold data.
    for (const char* live : {"RUNNING", "PENDING", "COMPLETING", "SUSPENDED", "SOME_NEW_STATE"})
        BOOST_TEST(slurm_state_is_live(live), live);
}

BOOST_AUTO_TEST_CASE(a_node_may_take_jobs_unless_down_drained_failing_or_not_responding)
{
    for (const char* state : {"idle", "mixed", "allocated", "completing", "reserved", "planned", "IDLE", "MIXED"})
        BOOST_TEST(slurm_node_may_take_jobs(state), state);
    for (const char* state :
         {"down", "down*", "drained", "draining", "drain", "fail", "failing", "maint", "idle*", "mixed*", "idle~",
          "powered_down", "idle#", "unknown", "", "IDLE+DRAIN", "DOWN+NOT_RESPONDING", "MIXED+DRAIN"})
        BOOST_TEST(!slurm_node_may_take_jobs(state), state);
}

BOOST_AUTO_TEST_CASE(a_job_held_for_features_no_node_that_may_take_it_has)
{
    BOOST_TEST(slurm_reason_is_unmet_features("BadConstraints"));
    BOOST_TEST(slurm_reason_is_unmet_features("ReqNodeNotAvail, UnavailableNodes:n2"));
    BOOST_TEST(!slurm_reason_is_unmet_features("Resources"));
    BOOST_TEST(!slurm_reason_is_unmet_features("Priority"));
}

BOOST_AUTO_TEST_SUITE_END()
