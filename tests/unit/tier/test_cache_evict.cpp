// tier/cache_evict: a node cache's entries evicted as their owner, a
// directory not listed in time among them.  Root only: becoming another
// user needs it.
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <string>
#include <vector>

#include "tests/unit/support/cache_fixtures.hpp"
#include "tier/cache_evict.hpp"
#include "tier/cache_measure.hpp"

using namespace dlstage;
using test::Cache;
using test::listing;
using test::seconds_since;

BOOST_AUTO_TEST_SUITE(cache_evict)

// A record being replaced (".NAME.tmp.PID.X") is its dataset's: an
// eviction that keeps a dataset keeps it too.
BOOST_AUTO_TEST_CASE(a_record_being_replaced_belongs_to_its_dataset)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    test::make_file(c.user_dir + "/..ready-x.toml.tmp.42.abc", "");
    c.give(c.user_dir + "/..ready-x.toml.tmp.42.abc");
    BOOST_TEST(listing(find_cache_entries(c.tier, c.state, "n1", 10, 10)) == "x 1\n");
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted({"x"}), 10) == "");
    BOOST_TEST(test::exists(c.user_dir + "/..ready-x.toml.tmp.42.abc"));
}

// A directory not listed in time whose owner has no job here: moved aside
// at once (no listing needed), then removed as its time allows.
BOOST_AUTO_TEST_CASE(an_unlisted_directory_of_an_idle_owner_is_moved_aside_and_removed)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry("y");
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted(), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir));
    DIR* parent = ::opendir((c.root + "/.cache").c_str());
    BOOST_REQUIRE(parent);
    std::vector<std::string> left;
    while (const dirent* d = ::readdir(parent))
        if (d->d_name[0] != '.')
            left.push_back(d->d_name);
    ::closedir(parent);
    BOOST_TEST(left.empty(), "left in the cache parent: " << (left.empty() ? "" : left.front()));
}

// Its owner has a job here using x: everything but x's names goes, ready
// records included; x's stay.
BOOST_AUTO_TEST_CASE(an_unlisted_directory_keeps_the_datasets_its_owners_jobs_use)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry("y");
    c.entry(".partial-x");
    for (const char* record : {".ready-x.toml", ".ready-y.toml"}) {
        test::make_file(c.user_dir + "/" + record, "");
        c.give(c.user_dir + "/" + record);
    }
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted({"x"}), 10) == "");
    BOOST_TEST(test::exists(c.user_dir + "/x/f"));
    BOOST_TEST(test::exists(c.user_dir + "/.partial-x/f"));
    BOOST_TEST(test::exists(c.user_dir + "/.ready-x.toml"));
    BOOST_TEST(!test::exists(c.user_dir + "/y"));
    BOOST_TEST(!test::exists(c.user_dir + "/.ready-y.toml"));
}

BOOST_AUTO_TEST_SUITE_END()
