#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "policies/tier_settings.hpp"

using namespace dlstage;
using namespace dlstage::policy;

namespace {
Tier tier_of(Scope scope, Cleanup cleanup, const std::string& path)
{
    Tier tier;
    tier.name = "t";
    tier.scope = scope;
    tier.cleanup = cleanup;
    tier.path = PathTemplate::parse(path);
    return tier;
}

std::vector<std::string> keys_of(const std::vector<KeyProblem>& problems)
{
    std::vector<std::string> keys;
    for (const KeyProblem& p : problems)
        keys.push_back(p.key);
    return keys;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(tier_settings)

BOOST_AUTO_TEST_CASE(each_kind_takes_the_paths_its_copies_need)
{
    BOOST_TEST(path_fits_kind(tier_of(Scope::Node, Cleanup::JobEnd, "/dev/shm/dlstage/%j")).empty());
    BOOST_TEST(path_fits_kind(tier_of(Scope::Node, Cleanup::Cache, "/local/dlstage/%j")).empty());
    BOOST_TEST(path_fits_kind(tier_of(Scope::Shared, Cleanup::Keep, "/p/scratch/dlstage/%u")).empty());
    const auto job_end = path_fits_kind(tier_of(Scope::Node, Cleanup::JobEnd, "/dev/shm/dlstage"));
    BOOST_REQUIRE(job_end.size() == 1u);
    BOOST_TEST(job_end[0].message ==
               "cleanup = \"job-end\" needs %j in the path, or two jobs would share (and delete) one directory");
    // A shared tier as a node cache, per node: both wrong, in check-config's order.
    BOOST_TEST(keys_of(path_fits_kind(tier_of(Scope::Shared, Cleanup::Cache, "/p/scratch/%n"))) ==
                   std::vector<std::string>({"path", "cleanup"}),
               boost::test_tools::per_element());
    BOOST_TEST(keys_of(path_fits_kind(tier_of(Scope::Shared, Cleanup::Keep, "/p/scratch/%j"))) ==
                   std::vector<std::string>({"path", "path"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(keys_only_some_kinds_take)
{
    Tier shared = tier_of(Scope::Shared, Cleanup::Keep, "/p/scratch/%u");
    const Tier node = tier_of(Scope::Node, Cleanup::JobEnd, "/dev/shm/%j");
    const Tier cache = tier_of(Scope::Node, Cleanup::Cache, "/local/%j");
    BOOST_TEST(purge_fits_kind(shared).allowed);
    BOOST_TEST(purge_fits_kind(node).reason == "purge_days, purge_by, warn_days and refresh_on_use are for scope = "
                                               "\"shared\" tiers (a file system the site purges)");
    BOOST_TEST(watermarks_fit_kind(cache).allowed);
    BOOST_TEST(!watermarks_fit_kind(node).allowed);
    BOOST_TEST(!watermarks_fit_kind(shared).allowed);
    BOOST_TEST(charge_memory_fits_kind(shared).allowed);  // unset
    shared.charge_memory = true;
    BOOST_TEST(charge_memory_fits_kind(shared).reason ==
               "a shared tier is not in node memory: charge_memory is for node tiers");
    shared.placement = Placement::Split;
    BOOST_TEST(!placement_fits_kind(shared).allowed);
    Tier split_node = node;
    split_node.placement = Placement::Split;
    BOOST_TEST(placement_fits_kind(split_node).allowed);
}

BOOST_AUTO_TEST_SUITE_END()
