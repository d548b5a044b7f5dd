// [[overrides]]: how they are read (config/config) and which one a job gets
// (policies/overrides), and what check-config --explain shows.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "config/config.hpp"
#include "lib/error.hpp"
#include "policies/overrides.hpp"
#include "tests/unit/support/config_problems.hpp"

using namespace dlstage;
using dlstage::policy::JobIdentity;
using dlstage::test::problems_of;

namespace {
const std::string kTwoTiers = R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "50%"

[tiers.ssd]
path = "/local/dlstage/%j"
max_inodes = 1000
)";

// The tiers and one table: partition gpu gets 80% of shm.
const std::string kGpuOverride = kTwoTiers + R"(
[[overrides]]
partition = "gpu"
tier = "shm"
max_bytes = "80%"
)";

bool has_problem(const std::vector<ConfigProblem>& problems, const std::string& key, const std::string& fragment)
{
    return std::any_of(problems.begin(), problems.end(), [&](const ConfigProblem& p) {
        return p.key == key && p.message.find(fragment) != std::string::npos;
    });
}

JobIdentity job(std::optional<std::string> partition, std::optional<std::string> account = std::nullopt,
                std::optional<std::string> user = std::nullopt, std::vector<std::string> groups = {})
{
    return {std::move(partition), std::move(account), std::move(user), std::move(groups)};
}

Tier shm_for(const Config& config, const JobIdentity& who)
{
    return policy::effective_tier(config, *config.find_tier("shm"), who);
}

std::string origin(const Tier& tier, const std::string& key)
{
    for (const auto& kv : policy::explain_tier(tier))
        if (kv.key == key)
            return kv.value + " # " + kv.origin;
    return "(no such key)";
}
}  // namespace

BOOST_AUTO_TEST_SUITE(overrides)

BOOST_AUTO_TEST_CASE(an_override_is_read_with_its_place_and_line)
{
    const Config config = parse_config(kGpuOverride, "t.toml");
    BOOST_REQUIRE_EQUAL(config.overrides.size(), 1u);
    const Override& rule = config.overrides[0];
    BOOST_TEST(rule.partition == "gpu");
    BOOST_TEST(rule.tier == "shm");
    BOOST_TEST(rule.max_bytes->str() == "80%");
    BOOST_TEST(!rule.max_inodes);
    BOOST_TEST(rule.label() == "overrides[0] (partition=gpu, line 10)");
}

BOOST_AUTO_TEST_CASE(keys_that_shape_a_tier_cannot_be_overridden)
{
    const auto problems = problems_of(kTwoTiers + R"(
[[overrides]]
user = "alice"
tier = "shm"
cleanup = "keep"
path = "/tmp/%j"
)");
    BOOST_TEST(has_problem(problems, "overrides[0].cleanup", "cannot be overridden"));
    BOOST_TEST(has_problem(problems, "overrides[0].path", "define another tier"));
    BOOST_TEST(has_problem(problems, "overrides[0]", "changes nothing"));
}

BOOST_AUTO_TEST_CASE(unknown_keys_get_did_you_mean)
{
    const auto problems = problems_of(kTwoTiers + R"(
[[overrides]]
partiton = "gpu"
tier = "shm"
max_byte = "10G"
)");
    BOOST_TEST(has_problem(problems, "overrides[0].partiton", "did you mean 'partition'?"));
    BOOST_TEST(has_problem(problems, "overrides[0].max_byte", "did you mean 'max_bytes'?"));
}

BOOST_AUTO_TEST_CASE(a_table_without_match_keys_matches_every_job_and_is_refused)
{
    BOOST_TEST(has_problem(problems_of(kTwoTiers + "[[overrides]]\ntier = \"shm\"\nmax_inodes = 5\n"), "overrides[0]",
                           "matches every job"));
}

BOOST_AUTO_TEST_CASE(values_are_checked_as_a_tier_checks_them)
{
    const auto problems = problems_of(kTwoTiers + R"(
[[overrides]]
group = "ml"
tier = "shmm"
max_bytes = "10Q"
max_inodes = -1
charge_memory = "yes"
)");
    BOOST_TEST(has_problem(problems, "overrides[0].tier", "unknown tier 'shmm' (did you mean 'shm'?)"));
    BOOST_TEST(has_problem(problems, "overrides[0].max_bytes", "invalid size '10Q'"));
    BOOST_TEST(has_problem(problems, "overrides[0].max_inodes", "positive integer"));
    BOOST_TEST(has_problem(problems, "overrides[0].charge_memory", "must be true or false"));
}

BOOST_AUTO_TEST_CASE(overrides_must_be_tables_and_need_a_tier)
{
    BOOST_TEST(has_problem(problems_of("overrides = 3\n" + kTwoTiers), "overrides", "[[overrides]]"));
    BOOST_TEST(has_problem(problems_of(kTwoTiers + "[[overrides]]\nuser = \"a\"\nmax_inodes = 5\n"),
                           "overrides[0].tier", "missing required key"));
    BOOST_TEST(has_problem(problems_of(kTwoTiers + "[[overrides]]\nuser = \" a\"\ntier = \"shm\"\nmax_inodes = 5\n"),
                           "overrides[0].user", "without surrounding blanks"));
}

BOOST_AUTO_TEST_CASE(a_match_needs_every_key_known_and_equal)
{
    const Config config = parse_config(kTwoTiers + R"(
[[overrides]]
partition = "gpu"
account = "proj1"
tier = "shm"
max_bytes = "10G"
)",
                                       "t.toml");
    const Override& rule = config.overrides[0];
    BOOST_TEST(policy::matches(rule, job("gpu", "proj1")));
    BOOST_TEST(!policy::matches(rule, job("gpu", "proj2")));
    BOOST_TEST(!policy::matches(rule, job("gpu")));  // account unknown: no match
    BOOST_TEST(!policy::matches(rule, job(std::nullopt, "proj1")));
}

BOOST_AUTO_TEST_CASE(without_a_match_the_tier_is_its_own)
{
    const Config config = parse_config(kGpuOverride, "t.toml");
    const Tier tier = shm_for(config, job("cpu"));
    BOOST_TEST(tier.max_bytes.str() == "50%");
    BOOST_TEST(origin(tier, "max_bytes") == "50% # tiers.shm");
    BOOST_TEST(origin(tier, "scope") == "node # default");
    BOOST_TEST(origin(tier, "charge_memory") == "true # default (a node tier under /dev/shm)");
}

// user > group > account > partition; more match keys beat fewer; the
// later of two tables with the same keys wins.
BOOST_AUTO_TEST_CASE(the_most_specific_table_wins_each_key)
{
    const Config config = parse_config(kTwoTiers + R"(
[[overrides]]
user = "alice"
tier = "shm"
max_bytes = "1G"

[[overrides]]
partition = "gpu"
tier = "shm"
max_bytes = "80%"
max_inodes = 50

[[overrides]]
group = "ml"
tier = "shm"
max_bytes = "2G"

[[overrides]]
account = "proj1"
partition = "gpu"
tier = "shm"
max_bytes = "3G"

[[overrides]]
group = "ml"
tier = "shm"
max_bytes = "4G"
)",
                                       "t.toml");
    // partition alone
    BOOST_TEST(shm_for(config, job("gpu")).max_bytes.str() == "80%");
    // group beats partition; of the two group tables the later wins
    const Tier grouped = shm_for(config, job("gpu", std::nullopt, "bob", {"bob", "ml"}));
    BOOST_TEST(grouped.max_bytes.str() == "4.0 GiB");
    BOOST_TEST(origin(grouped, "max_bytes") == "4.0 GiB # overrides[4] (group=ml, line 32)");
    // the partition's max_inodes still applies: each key on its own
    BOOST_TEST(origin(grouped, "max_inodes") == "50 # overrides[1] (partition=gpu, line 15)");
    // two keys (account + partition) beat one (the user's)
    BOOST_TEST(shm_for(config, job("gpu", "proj1", "alice", {"ml"})).max_bytes.str() == "3.0 GiB");
    // user beats group and partition
    BOOST_TEST(shm_for(config, job("gpu", "proj2", "alice", {"ml"})).max_bytes.str() == "1.0 GiB");
    // another tier is untouched
    const Config effective = policy::config_for_job(config, job("gpu", "proj1", "alice", {"ml"}));
    BOOST_TEST(*effective.find_tier("ssd")->max_inodes == 1000u);
    BOOST_TEST(effective.find_tier("shm")->max_bytes.str() == "3.0 GiB");
}

BOOST_AUTO_TEST_CASE(specificity_orders_key_sets)
{
    const auto with = [](std::string p, std::string a, std::string g, std::string u) {
        Override rule;
        rule.partition = p, rule.account = a, rule.group = g, rule.user = u;
        return policy::specificity(rule);
    };
    BOOST_TEST(with("", "", "", "u") > with("", "", "g", ""));
    BOOST_TEST(with("", "", "g", "") > with("", "a", "", ""));
    BOOST_TEST(with("", "a", "", "") > with("p", "", "", ""));
    BOOST_TEST(with("p", "a", "", "") > with("", "", "", "u"));
}

BOOST_AUTO_TEST_CASE(charge_memory_defaults_by_place_and_can_be_overridden)
{
    const Config config = parse_config(kTwoTiers + R"(
[tiers.ram]
path = "/run/ram/%j"
charge_memory = true

[[overrides]]
partition = "big"
tier = "shm"
charge_memory = false
)",
                                       "t.toml");
    BOOST_TEST(config.find_tier("shm")->charges_memory());
    BOOST_TEST(!config.find_tier("ssd")->charges_memory());
    BOOST_TEST(config.find_tier("ram")->charges_memory());
    BOOST_TEST(origin(*config.find_tier("ram"), "charge_memory") == "true # tiers.ram");
    BOOST_TEST(!shm_for(config, job("big")).charges_memory());
    BOOST_TEST(origin(*config.find_tier("ssd"), "charge_memory") == "false # default (not under /dev/shm)");
}

BOOST_AUTO_TEST_CASE(a_shared_tier_charges_no_memory)
{
    BOOST_TEST(has_problem(problems_of(R"(
[tiers.scratch]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"
charge_memory = true
)"),
                           "tiers.scratch.charge_memory", "for node tiers"));
}

// The prolog looks the user's groups up only when a table asks for one.
BOOST_AUTO_TEST_CASE(groups_matter_only_with_a_group_table)
{
    BOOST_TEST(!parse_config(kGpuOverride, "t.toml").matches_groups());
    BOOST_TEST(parse_config(kTwoTiers + "[[overrides]]\ngroup = \"ml\"\ntier = \"shm\"\nmax_inodes = 5\n", "t.toml")
                   .matches_groups());
}

BOOST_AUTO_TEST_CASE(identity_text_says_what_is_unknown)
{
    BOOST_TEST(job("gpu").str() == "partition=gpu, account=(unknown), user=(unknown), groups=(none)");
}

BOOST_AUTO_TEST_SUITE_END()
