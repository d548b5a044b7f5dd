// Shards unpacked by every rank into one shared copy (stager/extract/shard_shares):
// whose shard is whose, the overlap check by name hashes, and the
// directories' times that go to rank 0 and back.
#include <boost/test/unit_test.hpp>

#include "stager/extract/shard_shares.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage::stager;

BOOST_AUTO_TEST_SUITE(shard_shares)

BOOST_AUTO_TEST_CASE(shard_i_is_rank_i_mod_n_and_every_shard_has_one_rank)
{
    BOOST_TEST(shards_of_rank(8, 1, 3) == (std::vector<std::size_t>{1, 4, 7}));
    BOOST_TEST(shards_of_rank(2, 3, 4).empty());  // more ranks than shards
    std::vector<int> owners(10);
    for (int r = 0; r < 4; ++r)
        for (const std::size_t i : shards_of_rank(owners.size(), r, 4))
            ++owners[i];
    BOOST_TEST(std::all_of(owners.begin(), owners.end(), [](int n) { return n == 1; }));
}

BOOST_AUTO_TEST_CASE(a_name_two_shards_wrote_is_an_overlap_wherever_they_were)
{
    ShardOutcome a, b, c;
    a.names = {"x/0001.jpg", "x/0002.jpg"};
    b.names = {"x/0003.jpg"};
    c.names = {"x/0002.jpg"};
    BOOST_TEST(!any_repeated(name_hashes({a, b})));
    // On two ranks: each sends its hashes, rank 0 looks at all of them.
    std::vector<std::uint64_t> all = name_hashes({a});
    for (const std::uint64_t h : name_hashes({b, c}))
        all.push_back(h);
    BOOST_TEST(any_repeated(all));
    BOOST_TEST(name_hashes({a, b}).size() == 3u);
}

BOOST_AUTO_TEST_CASE(directory_times_travel_with_their_shard_index)
{
    ShardOutcome one, two;
    one.directory_times.push_back({"a", {timespec{1, 2}, timespec{3, 4}}});
    one.directory_times.push_back({"a/b c", {timespec{5, 6}, timespec{7, 8}}});
    const auto back = unpack_directory_times(pack_directory_times({3, 7}, {one, two}));
    BOOST_TEST_REQUIRE(back.size() == 2u);
    BOOST_TEST(back[0].first == 3u);
    BOOST_TEST(back[1].first == 7u);
    BOOST_TEST_REQUIRE(back[0].second.directory_times.size() == 2u);
    BOOST_TEST(back[0].second.directory_times[1].first == "a/b c");
    BOOST_TEST(back[0].second.directory_times[1].second[1].tv_nsec == 8);
    BOOST_TEST(back[1].second.directory_times.empty());
    BOOST_TEST(unpack_directory_times("").empty());
    const std::string cut = pack_directory_times({3}, {one}).substr(0, 20);
    BOOST_TEST(dlstage::test::error_of([&] { unpack_directory_times(cut); }) ==
               "malformed directory times from another rank (truncated)");
}

BOOST_AUTO_TEST_SUITE_END()
