// Whether a node cache entry is a hit (policies/cache_reuse): every fact
// must hold, and a miss says the first that did not, in the order the
// stager gathers them.
#include <boost/test/unit_test.hpp>

#include "policies/cache_reuse.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(cache_reuse)

namespace {
CacheHitFacts whole()
{
    CacheHitFacts f;
    f.has_record = f.same_source = f.sealed = f.listed = f.present = f.yours = f.top_unchanged = true;
    return f;
}

std::string why(const CacheHitFacts& f)
{
    const Verdict v = cache_entry_usable(f);
    BOOST_TEST(!v.allowed);
    return v.reason;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_whole_unchanged_entry_is_a_hit)
{
    BOOST_TEST(cache_entry_usable(whole()).allowed);
}

BOOST_AUTO_TEST_CASE(a_miss_says_the_first_fact_that_fails)
{
    BOOST_TEST(why(CacheHitFacts{}) == "not in the node cache");
    CacheHitFacts f = whole();
    f.record_problem = "not a regular file";
    BOOST_TEST(why(f) == "its record is unreadable (not a regular file)");
    f = whole();
    f.same_source = false;
    f.present = false;  // later facts are not looked at
    BOOST_TEST(why(f) == "the source changed since it was cached");
    f = whole();
    f.sealed = false;
    BOOST_TEST(why(f) == "its entry has no seal");
    f = whole();
    f.listed = false;
    BOOST_TEST(why(f) == "its list of contents is missing or unreadable");
    f = whole();
    f.yours = false;
    BOOST_TEST(why(f) == "its entry is not yours");
    f = whole();
    f.top_unchanged = false;
    BOOST_TEST(why(f) == "entries were added, removed or renamed since it was cached");
}

BOOST_AUTO_TEST_CASE(the_stat_of_every_entry_is_counted_by_kind)
{
    CacheHitFacts f = whole();
    f.missing = 3;
    f.foreign = 1;
    f.wrong_size = 4;
    f.changed = 2;
    BOOST_TEST(why(f) == "2 entries missing, 1 entries not yours, 2 entries changed since it was cached, 2 files of "
                         "another size");
}

BOOST_AUTO_TEST_SUITE_END()
