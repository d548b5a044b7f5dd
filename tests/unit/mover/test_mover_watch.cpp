#include <boost/test/unit_test.hpp>

#include "lib/error.hpp"
#include "mover/mover_watch.hpp"

using namespace dlstage;
using namespace dlstage::mover;

BOOST_AUTO_TEST_SUITE(mover_watch)

BOOST_AUTO_TEST_CASE(a_watched_mover_goes_to_the_watch_and_back_as_one_argument)
{
    const WatchedMover mine = parse_watched("4242:in21k:new");
    BOOST_TEST(mine.mover_id == "4242");
    BOOST_TEST(mine.dataset == "in21k");
    BOOST_TEST(mine.submitted);
    BOOST_TEST(watched_arg(mine) == "4242:in21k:new");
    const WatchedMover shared = parse_watched("7:far-file");
    BOOST_TEST(!shared.submitted);
    BOOST_TEST(watched_arg(shared) == "7:far-file");
    for (const char* bad : {"", "4242", "x:in21k", "4242:", "4242:in21k:old", "4242:a:b:c"})
        BOOST_CHECK_THROW(parse_watched(bad), Error);
}

BOOST_AUTO_TEST_CASE(the_watch_ends_at_once_when_its_client_is_gone)
{
    // No client to watch: nothing is asked of Slurm, nothing is said.
    std::vector<std::string> said;
    watch_movers({{"4242", "in21k", false}}, ProcessWatch(0, false), WatchTiming{},
                 [&](const std::string& line) { said.push_back(line); });
    BOOST_TEST(said.empty());
}

BOOST_AUTO_TEST_SUITE_END()
