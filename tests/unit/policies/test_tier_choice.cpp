#include <boost/test/unit_test.hpp>

#include "policies/tier_choice.hpp"

using namespace dlstage::policy;

namespace {
// "cifar" (a catalog dataset allowed on scratch, then shm) or a path, on a
// site with tiers scratch, shm and ssd.
TierRequest asking(const std::string& requested, const std::string& site_default, bool is_path = false)
{
    return {is_path ? "/p/x" : "cifar",
            requested,
            is_path,
            site_default,
            is_path ? std::vector<std::string>{"scratch", "shm", "ssd"} : std::vector<std::string>{"scratch", "shm"},
            {"scratch", "shm", "ssd"}};
}
}  // namespace

BOOST_AUTO_TEST_SUITE(tier_choice)

BOOST_AUTO_TEST_CASE(the_tier_written_wins)
{
    const TierChoice choice = choose_tier(asking("ssd", "shm"));
    BOOST_TEST(choice.verdict.allowed);
    BOOST_TEST(choice.tier == "ssd");  // allowed or not is tier_allowed's question
}

BOOST_AUTO_TEST_CASE(else_the_site_default_if_the_dataset_allows_it_else_its_first_tier)
{
    BOOST_TEST(choose_tier(asking("", "shm")).tier == "shm");
    BOOST_TEST(choose_tier(asking("", "ssd")).tier == "scratch");
    BOOST_TEST(choose_tier(asking("", "")).tier == "scratch");
    BOOST_TEST(choose_tier(asking("", "ssd", true)).tier == "ssd");
}

BOOST_AUTO_TEST_CASE(a_path_without_a_tier_needs_a_site_default)
{
    const TierChoice choice = choose_tier(asking("", "", true));
    BOOST_TEST(!choice.verdict.allowed);
    BOOST_TEST(choice.verdict.reason ==
               "no tier given for '/p/x' and no site default: write it as /p/x:TIER (tiers: scratch, shm, ssd)");
    BOOST_TEST(choose_tier(asking("shm", "", true)).verdict.allowed);
}

BOOST_AUTO_TEST_CASE(only_the_datasets_tiers_are_allowed)
{
    BOOST_TEST(tier_allowed("coco", {"ssd", "shm"}, "shm").allowed);
    const Verdict refused = tier_allowed("coco", {"ssd"}, "shm");
    BOOST_TEST(!refused.allowed);
    BOOST_TEST(refused.reason == "tier 'shm' is not allowed for dataset 'coco' (allowed: ssd)");
}

BOOST_AUTO_TEST_CASE(paths_only_where_the_site_allows_them)
{
    BOOST_TEST(path_allowed(true, "/p/x").allowed);
    BOOST_TEST(path_allowed(false, "/p/x").reason ==
               "staging paths outside the catalog is disabled on this cluster: '/p/x'; use a dataset from "
               "'dlstage catalog list'");
}

BOOST_AUTO_TEST_SUITE_END()
