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

BOOST_AUTO_TEST_SUITE_END()
