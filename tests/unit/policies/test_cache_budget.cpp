// policies/cache_budget: a prolog's node cache steps, each at its bound at
// once, end within its time, with room for the rest of it.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "policies/cache_budget.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(cache_budget_shares)

// What lib/sys/bounded keeps of a child's time to reap it.
double reaping(double seconds)
{
    return std::min(2.0, seconds / 5);
}

BOOST_AUTO_TEST_CASE(every_step_at_its_bound_ends_within_the_prologs_time)
{
    for (const double t : {4.0, 12.0, 60.0, 300.0, 3600.0}) {
        const CacheBudget b = cache_budget(t);
        // The rest of the prolog (directories, records) keeps 5% or more.
        BOOST_TEST(b.total() + reaping(t) <= 0.95 * t, t);
        BOOST_TEST(b.measure > 0);
        BOOST_TEST(b.probe > 0);
        BOOST_TEST(b.under_lock > 0);
    }
}

// A prolog waiting for the lock gives up only after another's whole time
// under it: one holder at its bound never fails a job.
BOOST_AUTO_TEST_CASE(a_waiter_outlasts_one_holder)
{
    for (const double t : {4.0, 12.0, 300.0}) {
        const CacheBudget b = cache_budget(t);
        BOOST_TEST(b.lock_wait > b.under_lock, t);
    }
}

BOOST_AUTO_TEST_SUITE_END()
