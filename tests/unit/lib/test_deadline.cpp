// lib/deadline: a deadline's time left, and a budget shared by steps in turn.
#include <boost/test/unit_test.hpp>

#include "lib/deadline.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(deadline)

BOOST_AUTO_TEST_CASE(a_deadline_gives_what_is_left_and_never_less_than_nothing)
{
    const Deadline ten(10);
    BOOST_TEST(ten.left() <= 10.0);
    BOOST_TEST(ten.left() > 9.0);
    BOOST_TEST(ten.within(3) == 3.0);
    BOOST_TEST(ten.within(30) <= 10.0);
    const Deadline past(-5);
    BOOST_TEST(past.left() == 0.0);
    BOOST_TEST(past.within(3) == 0.0);
}

// Each step its share of what is left over the steps still to come: the
// last one gets all that is left.
BOOST_AUTO_TEST_CASE(fair_shares_give_each_step_what_is_left_over_those_to_come)
{
    FairShares shares(12, 4);
    const double first = shares.next();
    BOOST_TEST(first <= 3.0);
    BOOST_TEST(first > 2.5);
    BOOST_TEST(shares.next() > 2.5);  // 9 s over 3 (nothing spent)
    BOOST_TEST(shares.next() > 2.5);
    const double last = shares.next();
    BOOST_TEST(last <= 12.0);
    BOOST_TEST(last > 11.0);           // all that is left
    BOOST_TEST(shares.next() > 11.0);  // past the parts: still what is left
    BOOST_TEST(FairShares(0, 3).next() == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()
