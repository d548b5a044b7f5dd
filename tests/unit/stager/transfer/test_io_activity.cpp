// Reading and writing at once (stager/transfer/io_activity): each interval
// goes to what was going on during it, however many threads did it.
#include <boost/test/unit_test.hpp>

#include <initializer_list>

#include "stager/transfer/io_activity.hpp"

using namespace dlstage::stager;

namespace {
IoActivity::Clock::time_point at(double seconds)
{
    return IoActivity::Clock::time_point{} +
           std::chrono::duration_cast<IoActivity::Clock::duration>(std::chrono::duration<double>(seconds));
}

bool near(double a, double b)
{
    return a > b - 1e-6 && a < b + 1e-6;
}

// What the threads did, one event at a time: +read/-read at its time.
struct Event {
    bool begins;
    Io kind;
    double at;
};

IoSeconds measured(std::initializer_list<Event> events, double now)
{
    IoActivity io;
    io.start(at(0));
    for (const Event& e : events) {
        if (e.begins)
            io.begin(e.kind, at(e.at));
        else
            io.end(e.kind, at(e.at));
    }
    return io.seconds(at(now));
}
}  // namespace

BOOST_AUTO_TEST_SUITE(io_activity)

BOOST_AUTO_TEST_CASE(reads_then_writes_never_overlap)
{
    const IoSeconds s =
        measured({{true, Io::Reading, 1}, {false, Io::Reading, 4}, {true, Io::Writing, 4}, {false, Io::Writing, 6}},
                 10);
    BOOST_TEST(near(s.reading, 3));
    BOOST_TEST(near(s.writing, 2));
    BOOST_TEST(near(s.both, 0));
}

BOOST_AUTO_TEST_CASE(threads_at_once_count_once_and_overlap_counts_as_both)
{
    // a second reader from 1 s: still one second per second
    const IoSeconds s = measured({{true, Io::Reading, 0},
                                  {true, Io::Reading, 1},
                                  {true, Io::Writing, 2},
                                  {false, Io::Reading, 3},
                                  {false, Io::Reading, 5},
                                  {false, Io::Writing, 6}},
                                 6);
    BOOST_TEST(near(s.reading, 5));
    BOOST_TEST(near(s.writing, 4));
    BOOST_TEST(near(s.both, 3));
}

BOOST_AUTO_TEST_CASE(an_interval_in_progress_counts_up_to_now)
{
    IoActivity io;
    io.start(at(0));
    io.begin(Io::Writing, at(2));
    BOOST_TEST(near(io.seconds(at(5)).writing, 3));
    BOOST_TEST(near(io.seconds(at(7)).writing, 5));  // asked again: not counted twice
}

BOOST_AUTO_TEST_CASE(start_forgets_what_was_measured_and_what_was_under_way)
{
    IoActivity io;
    io.start(at(0));
    io.begin(Io::Reading, at(0));
    io.start(at(10));
    io.end(Io::Reading, at(11));  // begun before the start: ignored
    io.begin(Io::Writing, at(12));
    io.end(Io::Writing, at(13));
    const IoSeconds s = io.seconds(at(20));
    BOOST_TEST(near(s.reading, 0));
    BOOST_TEST(near(s.writing, 1));
}

BOOST_AUTO_TEST_CASE(a_scope_ends_what_it_began_on_a_throw_too)
{
    IoActivity io;
    io.start();
    try {
        const IoScope reading(io, Io::Reading);
        throw 1;
    } catch (int) {
    }
    const IoSeconds before = io.seconds();
    const IoSeconds after = io.seconds(IoActivity::Clock::now() + std::chrono::seconds(5));
    BOOST_TEST(near(before.reading, after.reading));  // nothing is still reading
}

BOOST_AUTO_TEST_CASE(the_text_gives_the_three_figures)
{
    BOOST_TEST(io_text({89.1, 57.7, 0.4}) == "reading 89.10 s, writing 57.70 s, both at once 0.40 s");
}

BOOST_AUTO_TEST_SUITE_END()
