// [[overrides]] as pure rules (policies/overrides) over hand-built tables:
// the one order of specificity, each key decided on its own.  How the
// tables are read from TOML is test_overrides (it needs the loader).
#include <boost/test/unit_test.hpp>

#include "config/config.hpp"
#include "policies/overrides.hpp"

using namespace dlstage;
using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(override_rules)

namespace {
Override rule(std::size_t index, const std::string& partition, const std::string& user)
{
    Override o;
    o.index = index;
    o.line = 10 + static_cast<int>(index);
    o.tier = "shm";
    o.partition = partition;
    o.user = user;
    return o;
}
}  // namespace

BOOST_AUTO_TEST_CASE(the_more_specific_table_wins_each_key_on_its_own)
{
    Config config;
    Tier shm;
    shm.name = "shm";
    shm.max_inodes = 100;
    config.tiers.emplace("shm", shm);
    Override gpu = rule(0, "gpu", "");
    gpu.max_inodes = 200;
    gpu.charge_memory = false;
    Override alice = rule(1, "", "alice");
    alice.max_inodes = 300;
    config.overrides = {gpu, alice};

    JobIdentity job;
    job.partition = "gpu";
    job.user = "alice";
    BOOST_TEST(matches(gpu, job));
    BOOST_TEST(specificity(alice) > specificity(gpu));  // user > partition
    const Tier got = effective_tier(config, shm, job);
    BOOST_TEST(*got.max_inodes == 300u);
    BOOST_TEST(got.charge_memory.has_value());  // the partition's, the only table that sets it
    BOOST_TEST(!*got.charge_memory);

    job.partition.reset();  // not known here: the partition's table does not match
    BOOST_TEST(!matches(gpu, job));
    job.user = "bob";
    BOOST_TEST(*effective_tier(config, shm, job).max_inodes == 100u);
}

BOOST_AUTO_TEST_SUITE_END()
