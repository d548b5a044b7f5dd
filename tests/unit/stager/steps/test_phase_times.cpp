// The stager's time by phase (stager/steps/phase_times): laps add up per phase,
// start forgets, and the line names every phase, in order.
#include <boost/test/unit_test.hpp>

#include <thread>

#include "stager/steps/phase_times.hpp"

using namespace dlstage::stager;

BOOST_AUTO_TEST_SUITE(phase_times)

BOOST_AUTO_TEST_CASE(laps_go_to_their_phase_and_add_up)
{
    PhaseTimes times;
    const auto before = std::chrono::steady_clock::now();
    times.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    times.lap(Phase::Transfer);
    times.lap(Phase::Plan);  // only the moment between the two laps
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    times.lap(Phase::Transfer);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
    const PhaseSeconds& s = times.seconds();
    // No bound on how long the machine took between the laps (a loaded
    // node may preempt the test there): the sleeps went to Transfer, and
    // the laps add up to no more than the wall time.
    const double transfer = s[static_cast<std::size_t>(Phase::Transfer)],
                 plan = s[static_cast<std::size_t>(Phase::Plan)];
    BOOST_TEST(transfer >= 0.040);
    BOOST_TEST(plan >= 0.0);
    BOOST_TEST(transfer + plan <= wall);
    times.start();
    BOOST_TEST(times.seconds()[static_cast<std::size_t>(Phase::Transfer)] == 0.0);
}

BOOST_AUTO_TEST_CASE(the_line_names_every_phase_in_order)
{
    PhaseSeconds s{};
    s[static_cast<std::size_t>(Phase::Transfer)] = 10.024;
    s[static_cast<std::size_t>(Phase::Plan)] = 1.2;
    s[static_cast<std::size_t>(Phase::Publish)] = 0.001;
    BOOST_TEST(phases_text(s) == "plan 1.20 s, check 0.00 s, prepare 0.00 s, skeleton 0.00 s, transfer 10.02 s, "
                                 "finish 0.00 s, extract 0.00 s, publish 0.00 s");
}

BOOST_AUTO_TEST_SUITE_END()
