#include <boost/test/unit_test.hpp>

#include <toml++/toml.h>

#include "lib/error.hpp"
#include "stager/plan/split_share.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
constexpr std::uint64_t kMiB = 1u << 20;

Plan shard_plan(const std::vector<std::uint64_t>& sizes)
{
    Plan plan;
    plan.source_root = "/p/in21k";
    plan.format = Format::Tar;
    for (std::size_t i = 0; i < sizes.size(); ++i)
        plan.entries.add(EntryType::File, "shard-" + std::to_string(i) + ".tar", 0644, 1, 0, sizes[i]);
    return plan;
}

StageItem split_item()
{
    StageItem item;
    item.dataset.name = "in21k";
    item.tier.name = "shm";
    item.split = true;
    return item;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(split_share)

BOOST_AUTO_TEST_CASE(each_node_gets_its_shards_and_every_directory)
{
    Plan tree;
    tree.format = Format::Dir;
    tree.entries.add(EntryType::Dir, "a", 0755, 1, 0, 0);
    tree.entries.add(EntryType::File, "a/1", 0644, 1, 0, 10);
    tree.entries.add(EntryType::File, "a/2", 0644, 1, 0, 10);
    tree.entries.add(EntryType::Dir, "b", 0755, 1, 0, 0);
    tree.entries.add(EntryType::Symlink, "b/l", 0777, 1, 0, 0, "../a/1");
    tree.entries.add(EntryType::File, "b/3", 0644, 1, 0, 10);
    const SplitLayout split = place_plan(tree, 2);
    BOOST_TEST(split.part_entry == std::vector<std::size_t>({1, 2, 4, 5}), boost::test_tools::per_element());
    BOOST_TEST(split.node_of == std::vector<std::size_t>({0, 1, 0, 1}), boost::test_tools::per_element());
    BOOST_TEST(split.share_bytes == std::vector<std::uint64_t>({10, 20}), boost::test_tools::per_element());
    const Plan first = share_of(tree, split, 0), second = share_of(tree, split, 1);
    std::vector<std::string> paths;
    for (const Entry& e : first.entries)
        paths.push_back(e.path);
    BOOST_TEST(paths == std::vector<std::string>({"a", "a/1", "b", "b/l"}), boost::test_tools::per_element());
    BOOST_TEST(second.entries.size() == 4u);
    BOOST_TEST(first.file_count() + second.file_count() == tree.file_count());
    BOOST_TEST(first.total_bytes() + second.total_bytes() == tree.total_bytes());
}

BOOST_AUTO_TEST_CASE(a_plan_with_parts_is_placed_and_one_of_a_single_file_is_refused)
{
    const StageItem item = split_item();
    const Plan shards = shard_plan({3 * kMiB, 2 * kMiB, kMiB});
    const SplitLayout split = place_for(item, shards, 2);
    BOOST_TEST(split.node_of == place_plan(shards, 2).node_of, boost::test_tools::per_element());
    BOOST_TEST(split.share_bytes == std::vector<std::uint64_t>({4 * kMiB, 2 * kMiB}), boost::test_tools::per_element());
    Plan one = shard_plan({kMiB});
    one.format = Format::File;
    one.single_file = true;
    std::string refused;
    try {
        place_for(item, one, 2);
    } catch (const Error& e) {
        refused = e.what();
    }
    BOOST_TEST(refused.find("dataset 'in21k' is one file") == 0u, refused);
}

BOOST_AUTO_TEST_CASE(the_index_lists_every_shard_its_node_and_each_share)
{
    const Plan plan = shard_plan({3 * kMiB, kMiB, kMiB, 3 * kMiB, kMiB});
    const SplitLayout split = place_plan(plan, 2);
    const toml::table index = split_index(split_item(), plan, split, 1, {"n1", "n2"});
    BOOST_TEST(index["placement"].value_or(std::string()) == "split");
    BOOST_TEST(index["nodes"].value_or(0) == 2);
    BOOST_TEST(index["node"].value_or(0) == 1);
    const toml::array& parts = *index["parts"].as_array();
    BOOST_TEST(parts.size() == 5u);
    std::uint64_t on_one = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const toml::table& part = *parts[i].as_table();
        BOOST_TEST(part["path"].value_or(std::string()) == "shard-" + std::to_string(i) + ".tar");
        BOOST_TEST(part["node"].value_or(9) == static_cast<int>(split.node_of[i]));
        if (split.node_of[i] == 1)
            on_one += part["bytes"].value_or(std::uint64_t{0});
    }
    BOOST_TEST(index["bytes"].value_or(std::uint64_t{0}) == on_one);
    const toml::table& share = *(*index["shares"].as_array())[1].as_table();
    BOOST_TEST(share["host"].value_or(std::string()) == "n2");
    BOOST_TEST(share["bytes"].value_or(std::uint64_t{0}) == on_one);
    BOOST_TEST(shares_text(split) == "split over 2 nodes, 4.0 MiB to 5.0 MiB each");
    const std::string json = split_index_json(split_item(), plan, split, 1, {"n1", "n2"});
    BOOST_TEST(json.front() == '{');
    BOOST_TEST(json.find("\"placement\" : \"split\"") != std::string::npos, json);
}

BOOST_AUTO_TEST_CASE(a_trees_index_lists_shares_not_files)
{
    Plan tree = shard_plan({1, 2, 3});
    tree.format = Format::Dir;
    const SplitLayout split = place_plan(tree, 3);
    const toml::table index = split_index(split_item(), tree, split, 0, {"a", "b", "c"});
    BOOST_TEST(!index.contains("parts"));
    BOOST_TEST(index["shares"].as_array()->size() == 3u);
}

// A node that refuses a dataset whole for want of room says, as submit
// does, on how many nodes it would fit split (a tree with no manifest is
// first sized here).
BOOST_AUTO_TEST_CASE(a_refusal_for_want_of_room_on_a_node_weighs_this_nodes_room)
{
    StageItem item = split_item();
    item.split = false;
    item.dataset.source = "/p/in21k/shard-*.tar";
    item.tier.max_bytes = ByteLimit::parse("1000M");
    TierSpace space;
    space.total_bytes = 4000 * kMiB;
    space.free_bytes = 700 * kMiB;  // less than max_bytes: the room
    const Plan plan = shard_plan(std::vector<std::uint64_t>(25, 100 * kMiB));
    const policy::SplitFacts facts = split_facts_here(item, plan, space);
    BOOST_TEST(facts.room.value() == 700 * kMiB);
    BOOST_TEST(facts.shard_sizes.size() == 25u);
    BOOST_TEST(!facts.split_asked);
    const policy::Verdict whole = policy::Verdict::refuse("dataset 'in21k' needs 2.4 GiB but tier 'shm' has only "
                                                          "700.0 MiB free");
    BOOST_TEST(policy::with_split_advice(whole, item.dataset, item.tier, plan.format, facts).reason ==
               whole.reason + "; it would fit split on 4 or more nodes: --stage-data=in21k:shm:split with -N 4 or "
                              "more");
    space.free_bytes.reset();  // the tier's max_bytes alone
    BOOST_TEST(split_facts_here(item, plan, space).room.value() == 1000 * kMiB);
}

BOOST_AUTO_TEST_CASE(a_tree_walked_in_segments_counts_what_came_before_as_the_least_it_needs)
{
    StageItem item = split_item();
    item.split = false;
    item.dataset.name = "wide";
    item.dataset.source = "/home/me/wide";  // a path, not in the catalog: asked for by its path
    item.dataset.from_catalog = false;
    item.tier.max_bytes = ByteLimit::parse("72M");
    Plan segment;
    segment.format = Format::Dir;
    segment.entries.add(EntryType::Dir, "d19", 0755, 1, 0, 0);
    segment.entries.add(EntryType::File, "d19/a.bin", 0644, 1, 0, 2 * kMiB);
    segment.entries.add(EntryType::File, "d19/b.bin", 0644, 1, 0, 2 * kMiB);
    const policy::SplitFacts facts = split_facts_here(item, segment, TierSpace{}, 72 * kMiB, true);
    BOOST_TEST(facts.total.value() == 76 * kMiB);
    BOOST_TEST(facts.total_so_far);
    BOOST_TEST(facts.shard_sizes.empty());  // a tree: its bytes shared evenly
    BOOST_TEST(policy::split_advice(facts) ==
               "it would fit split on 2 or more nodes, more if the rest of the tree (not walked yet) is large: "
               "--stage-data=/home/me/wide:shm:split with -N 2 or more");
}

BOOST_AUTO_TEST_SUITE_END()
