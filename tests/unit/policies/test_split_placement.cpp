#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>

#include "policies/split_placement.hpp"

using namespace dlstage;
using namespace dlstage::policy;

namespace {
constexpr std::uint64_t kMiB = 1u << 20;

std::uint64_t spread_of(const std::vector<std::uint64_t>& shares)
{
    const auto [low, high] = std::minmax_element(shares.begin(), shares.end());
    return *high - *low;
}

// A dataset NAME from SOURCE refused whole in tier 'shm' of 1000 MiB.
struct WholeRefusal {
    SplitFacts facts;
    Dataset dataset;
    Tier shm;

    WholeRefusal(const std::string& name, const std::string& source)
    {
        facts.dataset = name;
        facts.tier = "shm";
        facts.room = 1000 * kMiB;
        dataset.name = name;
        dataset.source = source;
        shm.name = "shm";
    }
};
}  // namespace

BOOST_AUTO_TEST_SUITE(split_placement)

BOOST_AUTO_TEST_CASE(equal_shards_go_round_robin_in_node_order)
{
    const std::vector<std::uint64_t> sizes(10, 100 * kMiB);
    const std::vector<std::size_t> placement = place_shards(sizes, 3);
    for (std::size_t i = 0; i < sizes.size(); ++i)
        BOOST_TEST(placement[i] == i % 3);
    BOOST_TEST(node_shares(sizes, placement, 3) == std::vector<std::uint64_t>({400 * kMiB, 300 * kMiB, 300 * kMiB}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(uneven_shards_are_balanced_within_one_shard)
{
    // Round robin would give node 0 every large shard.
    std::vector<std::uint64_t> sizes;
    for (int i = 0; i < 12; ++i)
        sizes.push_back(i % 3 == 0 ? 90 * kMiB : 10 * kMiB);
    const std::vector<std::size_t> placement = place_shards(sizes, 3);
    BOOST_TEST(spread_of(node_shares(sizes, placement, 3)) <= 90 * kMiB);
    BOOST_TEST(spread_of(node_shares(sizes, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}, 3)) > 90 * kMiB);
    // Random sizes, any node count: never more than the largest shard apart.
    std::mt19937_64 random(47);
    for (int round = 0; round < 200; ++round) {
        std::vector<std::uint64_t> any(1 + random() % 40);
        for (std::uint64_t& size : any)
            size = 1 + random() % (1000 * kMiB);
        const std::size_t nodes = 1 + random() % 8;
        const std::vector<std::uint64_t> shares = node_shares(any, place_shards(any, nodes), nodes);
        BOOST_TEST(spread_of(shares) <= *std::max_element(any.begin(), any.end()));
    }
}

BOOST_AUTO_TEST_CASE(the_fewest_nodes_a_split_fits_on)
{
    const std::vector<std::uint64_t> sizes(25, 100 * kMiB);  // 2.5 GiB in 100 MiB shards
    BOOST_TEST(fewest_nodes_split(sizes, 1000 * kMiB).value() == 3u);
    BOOST_TEST(fewest_nodes_split(sizes, 2500 * kMiB).value() == 1u);
    BOOST_TEST(fewest_nodes_split(sizes, 100 * kMiB).value() == 25u);
    BOOST_TEST(!fewest_nodes_split(sizes, 99 * kMiB).has_value());  // a shard alone is larger
}

BOOST_AUTO_TEST_CASE(a_dataset_that_fits_only_split_is_admitted_split_and_otherwise_told_how)
{
    SplitFacts facts;
    facts.dataset = "in21k";
    facts.tier = "shm";
    facts.shard_sizes.assign(25, 100 * kMiB);
    facts.room = 1000 * kMiB;
    facts.nodes = 3;
    facts.split_asked = true;
    BOOST_TEST(admit_placement(facts).allowed);
    facts.nodes = 2;
    BOOST_TEST(admit_placement(facts).reason ==
               "dataset 'in21k' (2.4 GiB) split over 2 nodes needs more than the 1000.0 MiB tier 'shm' takes per "
               "node; it fits split on 3 or more nodes: ask for -N 3 or more");
    facts.split_asked = false;
    facts.nodes = 3;
    BOOST_TEST(admit_placement(facts).reason ==
               "dataset 'in21k' needs 2.4 GiB but tier 'shm' takes 1000.0 MiB per node; it would fit split on 3 or "
               "more nodes: --stage-data=in21k:shm:split with -N 3 or more");
    facts.room = 99 * kMiB;
    BOOST_TEST(admit_placement(facts).reason ==
               "dataset 'in21k' has a part of 100.0 MiB but tier 'shm' takes 99.0 MiB per node: it cannot be "
               "staged there, not even split; choose another tier or cut the dataset into smaller shards");
    facts.room = 4000 * kMiB;  // fits whole: no split needed
    BOOST_TEST(admit_placement(facts).allowed);
    facts.room.reset();  // not known here: the node checks
    BOOST_TEST(admit_placement(facts).allowed);
}

BOOST_AUTO_TEST_CASE(a_tree_without_file_sizes_is_taken_as_its_bytes_shared_evenly)
{
    SplitFacts facts;
    facts.dataset = "tree";
    facts.tier = "shm";
    facts.total = 2500 * kMiB;
    facts.room = 1000 * kMiB;
    facts.nodes = 3;
    facts.split_asked = true;
    BOOST_TEST(admit_placement(facts).allowed);
    BOOST_TEST(largest_share(facts, 3).value() == (2500 * kMiB + 2) / 3);
    facts.nodes = 2;
    BOOST_TEST(admit_placement(facts).reason.find("it fits split on 3 or more nodes: ask for -N 3 or more") !=
               std::string::npos);
    facts.nodes = 0;  // this Slurm does not tell: the node checks
    BOOST_TEST(admit_placement(facts).allowed);
    BOOST_TEST(!largest_share(facts, 0).has_value());
    facts.total.reset();
    BOOST_TEST(!largest_share(facts, 3).has_value());
}

BOOST_AUTO_TEST_CASE(a_whole_refusal_gets_the_split_advice_when_a_split_would_fit)
{
    WholeRefusal refused("in21k", "/p/in21k/shard-*.tar");
    SplitFacts& facts = refused.facts;
    const Dataset& in21k = refused.dataset;
    const Tier& shm = refused.shm;
    facts.shard_sizes.assign(25, 100 * kMiB);
    const Verdict whole = Verdict::refuse("dataset 'in21k' needs 2.4 GiB but tier 'shm' allows at most 1000.0 MiB");
    BOOST_TEST(with_split_advice(whole, in21k, shm, Format::Tar, facts).reason ==
               "dataset 'in21k' needs 2.4 GiB but tier 'shm' allows at most 1000.0 MiB; it would fit split on 3 or "
               "more nodes: --stage-data=in21k:shm:split with -N 3 or more");
    BOOST_TEST(with_split_advice(Verdict::allow(), in21k, shm, Format::Tar, facts).allowed);
    facts.room = 99 * kMiB;  // not even split: the refusal alone
    BOOST_TEST(with_split_advice(whole, in21k, shm, Format::Tar, facts).reason == whole.reason);
    facts.room.reset();
    BOOST_TEST(with_split_advice(whole, in21k, shm, Format::Tar, facts).reason == whole.reason);
}

BOOST_AUTO_TEST_CASE(the_split_advice_only_where_a_split_may_be_asked)
{
    WholeRefusal refused("tree", "/p/tree");
    SplitFacts& facts = refused.facts;
    const Dataset& tree = refused.dataset;
    const Tier& shm = refused.shm;
    facts.total = 2500 * kMiB;
    const Verdict whole = Verdict::refuse("dataset 'tree' needs 2.4 GiB but tier 'shm' has only 1000.0 MiB free");
    BOOST_TEST(with_split_advice(whole, tree, shm, Format::Dir, facts).reason ==
               whole.reason + "; it would fit split on 3 or more nodes: --stage-data=tree:shm:split with -N 3 or more");
    Tier scratch = shm;  // one copy every node reads: never split
    scratch.scope = Scope::Shared;
    BOOST_TEST(with_split_advice(whole, tree, scratch, Format::Dir, facts).reason == whole.reason);
    Dataset image = tree;  // mounted whole
    image.mode = Mode::Mount;
    BOOST_TEST(with_split_advice(whole, image, shm, Format::Dir, facts).reason == whole.reason);
    BOOST_TEST(with_split_advice(whole, tree, shm, Format::File, facts).reason == whole.reason);  // one file
    facts.split_asked = true;  // split already: admit_placement says how many nodes
    BOOST_TEST(with_split_advice(whole, tree, shm, Format::Dir, facts).reason == whole.reason);
}

BOOST_AUTO_TEST_CASE(a_walk_refused_part_way_advises_the_fewest_nodes_and_says_the_rest_counts)
{
    SplitFacts facts;
    facts.dataset = "wide";
    facts.tier = "shm";
    facts.total = 76 * kMiB;  // what the walk found before its segment was refused
    facts.total_so_far = true;
    facts.room = 72 * kMiB;
    BOOST_TEST(split_advice(facts) == "it would fit split on 2 or more nodes, more if the rest of the tree (not walked "
                                      "yet) is large: --stage-data=wide:shm:split with -N 2 or more");
}

namespace {
Tier node_tier(Placement placement = Placement::Whole)
{
    Tier tier;
    tier.name = "shm";
    tier.placement = placement;
    return tier;
}

Dataset dataset_of(const std::string& source, Format format = Format::Auto)
{
    Dataset dataset;
    dataset.name = "d";
    dataset.source = source;
    dataset.format = format;
    return dataset;
}
}  // namespace

BOOST_AUTO_TEST_CASE(only_shard_sets_and_trees_split_and_only_into_node_tiers)
{
    const Tier shm = node_tier();
    BOOST_TEST(split_possible(dataset_of("/p/s/shard-*.tar"), shm, Format::Tar).allowed);
    BOOST_TEST(split_possible(dataset_of("/p/tree"), shm, Format::Dir).allowed);
    BOOST_TEST(split_possible(dataset_of("/p/tree"), shm, Format::Auto).allowed);  // the stager's plan tells
    BOOST_TEST(split_possible(dataset_of("/p/one.tar"), shm, Format::Tar).reason ==
               "dataset 'd' is one file (/p/one.tar): it cannot be split; stage it whole, or pack it into tar shards "
               "with 'dlstage pack --format tar'");
    BOOST_TEST(!split_possible(dataset_of("/p/i.sqfs"), shm, Format::Squashfs).allowed);
    BOOST_TEST(split_possible(dataset_of("/p/set/part-*.sqfs"), shm, Format::Squashfs).allowed);  // an image set
    BOOST_TEST(!split_possible(dataset_of("/p/f.bin"), shm, Format::File).allowed);
    Tier scratch = node_tier();
    scratch.name = "scratch";
    scratch.scope = Scope::Shared;
    BOOST_TEST(
        split_possible(dataset_of("/p/tree"), scratch, Format::Dir).reason.find("a shared tier holds one copy") !=
        std::string::npos);
    Dataset mounted = dataset_of("/p/s/shard-*");
    mounted.mode = Mode::Mount;
    BOOST_TEST(split_possible(mounted, shm, Format::Tar).reason.find("mode = \"mount\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_request_decides_then_the_dataset_then_the_tier_for_what_splits)
{
    const Dataset shards = dataset_of("/p/s/shard-*");
    const Dataset tree = dataset_of("/p/tree", Format::Dir);
    const Dataset unknown = dataset_of("/p/tree");  // a directory only a stat can tell
    const Tier whole = node_tier(), splitting = node_tier(Placement::Split);
    BOOST_TEST(placed_split(Placement::Split, shards, whole));
    BOOST_TEST(!placed_split(Placement::Whole, shards, splitting));
    BOOST_TEST(!placed_split(std::nullopt, shards, whole));
    BOOST_TEST(placed_split(std::nullopt, shards, splitting));
    BOOST_TEST(placed_split(std::nullopt, tree, splitting));
    BOOST_TEST(placed_split(std::nullopt, dataset_of("/p/set/part-*.sqfs"), splitting));
    BOOST_TEST(!placed_split(std::nullopt, unknown, splitting));
    BOOST_TEST(!placed_split(std::nullopt, dataset_of("/p/one.tar"), splitting));
    Dataset by_catalog = dataset_of("/p/tree");
    by_catalog.placement = Placement::Split;
    BOOST_TEST(placed_split(std::nullopt, by_catalog, whole));
    Tier scratch = whole;
    scratch.scope = Scope::Shared;
    BOOST_TEST(!placed_split(std::nullopt, by_catalog, scratch));  // whole in a shared tier: one copy for all
    Dataset mounted = by_catalog;
    mounted.mode = Mode::Mount;
    BOOST_TEST(!placed_split(std::nullopt, mounted, splitting));
}

// A split share in a node cache is kept by its node's place in the job's
// node list; the stager writes rank R's share R: they must agree.
BOOST_AUTO_TEST_CASE(split_shares_are_kept_only_with_ranks_in_the_jobs_node_order)
{
    const std::vector<std::string> job{"n1", "n2", "n3"};
    BOOST_TEST(split_shares_in_node_order({"n1", "n2", "n3"}, job).allowed);
    const Verdict reversed = split_shares_in_node_order({"n3", "n2", "n1"}, job);
    BOOST_TEST(!reversed.allowed);
    BOOST_TEST(reversed.reason ==
                   "its node cache shares cannot be kept: rank 0 runs on n3, the job's node 2 in its list, so its "
                   "share would not be the one that node's prolog keeps from eviction: launch one rank per node in "
                   "the job's node order, or stage it whole or to a job-end tier",
               reversed.reason);
    BOOST_TEST(split_shares_in_node_order({"n1", "x9", "n3"}, job)
                   .reason.find("rank 1 runs on x9, not one of the "
                                "job's nodes") != std::string::npos);
    BOOST_TEST(split_shares_in_node_order({"n1", "n2"}, job).reason.find("2 ranks for the job's 3 nodes") !=
               std::string::npos);
    BOOST_TEST(!split_shares_in_node_order({"n1"}, std::nullopt).allowed);
}

BOOST_AUTO_TEST_SUITE_END()
