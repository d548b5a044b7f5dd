#include <boost/test/unit_test.hpp>

#include "policies/node_features.hpp"

using namespace dlstage;
using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(node_features)

BOOST_AUTO_TEST_CASE(an_entry_feature_names_the_dataset_its_owner_and_a_share)
{
    const LocalitySettings settings;
    BOOST_TEST(entry_feature(settings, {"imagenet", 1004, 0}) == "dls_imagenet_u1004");
    BOOST_TEST(entry_feature(settings, {"in21k", 1004, 4}) == "dls_in21k_of4_u1004");
    BOOST_TEST(entry_feature(settings, {"a-b.c", 7, 0}) == "dls_a-b.c_u7");
}

BOOST_AUTO_TEST_CASE(a_long_name_is_cut_to_the_limit_and_ends_in_a_hash_of_the_whole)
{
    LocalitySettings settings;
    settings.feature_max_length = kShortestFeatureMaximum;
    const std::string long_name(60, 'x');
    const std::string cut = entry_feature(settings, {long_name, 1004, 0});
    BOOST_TEST(cut.size() == static_cast<std::size_t>(kShortestFeatureMaximum));
    BOOST_TEST(cut.rfind("dls_xxx", 0) == 0u);
    BOOST_TEST(cut.substr(cut.size() - 6) == "_u1004");
    // Two names cut alike differ by their hash.
    BOOST_TEST(entry_feature(settings, {long_name + "y", 1004, 0}) != cut);
    BOOST_TEST(entry_feature(settings, {long_name, 1004, 0}) == cut);
    // The longest prefix, share count and uid still leave room for a name.
    settings.feature_max_length = kShortestFeatureMaximum;
    settings.feature_prefix = "abcdefghijklmnop";
    const std::string tightest = entry_feature(settings, {long_name, 4294967294ul, 65536});
    BOOST_TEST(tightest.size() <= static_cast<std::size_t>(kShortestFeatureMaximum));
    const auto back = entry_of_feature(settings, tightest);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->entry.dataset.rfind("xx", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_feature_reads_back_as_its_entry)
{
    LocalitySettings settings;
    for (const CachedEntryFacts& entry :
         {CachedEntryFacts{"imagenet", 1004, 0}, CachedEntryFacts{"in21k", 7, 4}, CachedEntryFacts{"a_u1.b", 0, 0}}) {
        const auto back = entry_of_feature(settings, entry_feature(settings, entry));
        BOOST_REQUIRE(back);
        BOOST_TEST(back->entry.dataset == entry.dataset);
        BOOST_TEST(back->entry.uid == entry.uid);
        BOOST_TEST(back->entry.shares == entry.shares);
        BOOST_TEST(!back->cut);
    }
    settings.feature_max_length = kShortestFeatureMaximum;
    const auto cut = entry_of_feature(settings, entry_feature(settings, {std::string(60, 'x'), 1004, 2}));
    BOOST_REQUIRE(cut);
    BOOST_TEST(cut->cut);
    BOOST_TEST(cut->entry.uid == 1004u);
    BOOST_TEST(cut->entry.shares == 2u);
    BOOST_TEST(!entry_of_feature(settings, "dls_x"));
    BOOST_TEST(!entry_of_feature(settings, "gpu_u1"));
    BOOST_TEST(!entry_of_feature(settings, "dls__u1"));
}

BOOST_AUTO_TEST_CASE(a_name_that_would_read_back_as_another_entry_is_hashed)
{
    const LocalitySettings settings;
    // a_of2 whole is not a's share of 2, nor x_h0123abcd whole a cut name.
    const std::string whole = entry_feature(settings, {"a_of2", 1004, 0});
    BOOST_TEST(whole != entry_feature(settings, {"a", 1004, 2}));
    BOOST_TEST(entry_feature(settings, {"a", 1004, 2}) == "dls_a_of2_u1004");
    const auto back = entry_of_feature(settings, whole);
    BOOST_REQUIRE(back);
    BOOST_TEST(back->entry.dataset == "a_of2");
    BOOST_TEST(back->entry.shares == 0u);
    BOOST_TEST(back->cut);
    const std::string hashed_like = entry_feature(settings, {"x_h0123abcd", 1004, 0});
    BOOST_TEST(hashed_like.size() == std::string("dls_x_h0123abcd_h01234567_u1004").size());
    BOOST_TEST(entry_of_feature(settings, hashed_like)->entry.dataset == "x_h0123abcd");
}

BOOST_AUTO_TEST_CASE(only_features_with_the_prefix_are_dlstages)
{
    LocalitySettings settings;
    settings.feature_prefix = "cache_";
    BOOST_TEST(is_dlstage_feature(settings, "cache_x_u1"));
    BOOST_TEST(!is_dlstage_feature(settings, "cache_"));
    BOOST_TEST(!is_dlstage_feature(settings, "dls_x_u1"));
    BOOST_TEST(!is_dlstage_feature(settings, "gpu"));
}

BOOST_AUTO_TEST_CASE(a_prefix_is_letters_digits_and_underscores_from_a_letter)
{
    BOOST_TEST(valid_feature_prefix("dls_"));
    BOOST_TEST(valid_feature_prefix("c2"));
    BOOST_TEST(!valid_feature_prefix(""));
    BOOST_TEST(!valid_feature_prefix("_x"));
    BOOST_TEST(!valid_feature_prefix("a&b"));
    BOOST_TEST(!valid_feature_prefix("a,b"));
    BOOST_TEST(!valid_feature_prefix("abcdefghijklmnopq"));
}

BOOST_AUTO_TEST_CASE(the_sites_features_are_kept_first_and_ours_replaced)
{
    const LocalitySettings settings;
    const std::vector<std::string> now{"gpu", "dls_old_u1", "ib", "dls_keep_u2"};
    BOOST_TEST(dlstage_features_of(now, settings) == (std::set<std::string>{"dls_keep_u2", "dls_old_u1"}));
    const auto after = node_features_with(now, {"dls_keep_u2", "dls_new_u1"}, settings);
    BOOST_TEST(after == (std::vector<std::string>{"gpu", "ib", "dls_keep_u2", "dls_new_u1"}));
    BOOST_TEST(node_features_with(now, {}, settings) == (std::vector<std::string>{"gpu", "ib"}));
}

BOOST_AUTO_TEST_CASE(a_change_replaces_adds_or_removes_ours)
{
    const std::set<std::string> now{"dls_a_u1", "dls_b_u1"};
    BOOST_TEST(features_after(now, {"dls_c_u1"}, FeatureChange::Replace) == (std::set<std::string>{"dls_c_u1"}));
    BOOST_TEST(features_after(now, {"dls_c_u1"}, FeatureChange::Add) ==
               (std::set<std::string>{"dls_a_u1", "dls_b_u1", "dls_c_u1"}));
    BOOST_TEST(features_after(now, {"dls_a_u1", "dls_z_u1"}, FeatureChange::Remove) ==
               (std::set<std::string>{"dls_b_u1"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(job_preferences)

namespace {
NodeHolding node_with(std::set<std::string> features, bool up = true)
{
    return {std::move(features), up};
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_job_prefers_the_nodes_holding_its_dataset)
{
    PreferenceFacts facts{{"dls_a_u1"}, {node_with({}), node_with({"dls_a_u1", "gpu"})}, 1, ""};
    BOOST_TEST(job_preference(facts).prefer == "dls_a_u1");
}

BOOST_AUTO_TEST_CASE(no_preference_slurm_would_hold_or_refuse_the_job_on)
{
    // Held by a drained node alone: Slurm 22.05 would wait for it.
    PreferenceFacts drained{{"dls_a_u1"}, {node_with({}), node_with({"dls_a_u1"}, false)}, 1, ""};
    BOOST_TEST(job_preference(drained).prefer.empty());
    BOOST_TEST(job_preference(drained).why.find("may take jobs") != std::string::npos);
    // Fewer holders than nodes asked: Slurm refuses the submission.
    PreferenceFacts two{{"dls_a_u1"}, {node_with({"dls_a_u1"}), node_with({})}, 2, ""};
    BOOST_TEST(job_preference(two).prefer.empty());
    two.nodes[1].features.insert("dls_a_u1");
    BOOST_TEST(job_preference(two).prefer == "dls_a_u1");
    // No node of the partition holds it.
    PreferenceFacts none{{"dls_a_u1"}, {node_with({"gpu"})}, 1, ""};
    BOOST_TEST(job_preference(none).prefer.empty());
    // A number of nodes submit cannot know.
    PreferenceFacts unknown{{"dls_a_u1"}, {node_with({"dls_a_u1"})}, 0, ""};
    BOOST_TEST(job_preference(unknown).prefer.empty());
}

BOOST_AUTO_TEST_CASE(the_users_own_prefer_is_kept)
{
    PreferenceFacts facts{{"dls_a_u1"}, {node_with({"dls_a_u1"})}, 1, "fast"};
    BOOST_TEST(job_preference(facts).prefer.empty());
    BOOST_TEST(job_preference(facts).why == "the job's own --prefer is kept");
}

BOOST_AUTO_TEST_CASE(several_datasets_prefer_nodes_with_all_else_the_first_held)
{
    PreferenceFacts both{{"dls_a_u1", "dls_b_u1"},
                         {node_with({"dls_a_u1", "dls_b_u1"}), node_with({"dls_b_u1"})},
                         1,
                         ""};
    BOOST_TEST(job_preference(both).prefer == "dls_a_u1&dls_b_u1");
    PreferenceFacts apart{{"dls_a_u1", "dls_b_u1"}, {node_with({"dls_a_u1"}), node_with({"dls_b_u1"})}, 1, ""};
    BOOST_TEST(job_preference(apart).prefer == "dls_a_u1");
    PreferenceFacts second{{"dls_a_u1", "dls_b_u1"}, {node_with({"dls_b_u1"})}, 1, ""};
    BOOST_TEST(job_preference(second).prefer == "dls_b_u1");
}

BOOST_AUTO_TEST_CASE(only_a_prefer_of_dlstages_features_alone_is_dlstages)
{
    const LocalitySettings settings;
    BOOST_TEST(prefer_is_dlstages(settings, "dls_a_u1"));
    BOOST_TEST(prefer_is_dlstages(settings, "dls_a_u1&dls_b_u1"));
    BOOST_TEST(!prefer_is_dlstages(settings, "dls_a_u1&gpu"));
    BOOST_TEST(!prefer_is_dlstages(settings, "dls_a_u1|dls_b_u1"));
    BOOST_TEST(!prefer_is_dlstages(settings, "gpu"));
    BOOST_TEST(!prefer_is_dlstages(settings, ""));
    BOOST_TEST(!prefer_is_dlstages(settings, "dls_a_u1&"));
}

BOOST_AUTO_TEST_CASE(an_entry_attracts_until_its_source_changes)
{
    EntrySourceLook look;
    look.record_read = look.same_source = look.looked = look.present = true;
    look.known_current = 1000;
    look.newest_ctime = 1000;
    BOOST_TEST(entry_attracts(look).allowed);
    look.manifest_scanned = 900;
    BOOST_TEST(entry_attracts(look).allowed);

    EntrySourceLook changed = look;
    changed.newest_ctime = 1001;
    BOOST_TEST(entry_attracts(changed).reason == "its source changed since it was cached here");
    changed = look;
    changed.manifest_scanned = 1001;  // scanned again since
    BOOST_TEST(entry_attracts(changed).reason == "its source changed since it was cached here");
    changed = look;
    changed.present = false;
    BOOST_TEST(entry_attracts(changed).reason == "its source is gone or unreadable");
    changed = look;
    changed.same_source = false;  // the catalog names another source now
    BOOST_TEST(entry_attracts(changed).reason == "the catalog names another source for it now");
    changed = look;
    changed.record_read = false;
    BOOST_TEST(!entry_attracts(changed).allowed);

    EntrySourceLook far = look;  // a two-hop dataset: not this node's to look at
    far.looked = false;
    far.present = false;
    far.newest_ctime = 5000;
    BOOST_TEST(entry_attracts(far).allowed);
}

BOOST_AUTO_TEST_SUITE_END()
