// tier/cache_measure: a node cache's entries as root measures them, in a
// temporary tier whose user directory belongs to "nobody" (the measuring
// child becomes that user, as the prolog's does); evicted where a test
// checks that what was measured is what goes.  Root only: becoming
// another user and mounting need it.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "tests/unit/support/cache_fixtures.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tier/cache_evict.hpp"
#include "tier/cache_measure.hpp"

using namespace dlstage;
using test::Cache;
using test::listing;
using test::seconds_since;

BOOST_AUTO_TEST_SUITE(cache_measure)

// The hostile user's case: a FUSE server of theirs, stopped, on a directory
// in their own cache directory.  The measuring child is that user, so FUSE
// lets it in; it must not even try.
BOOST_AUTO_TEST_CASE(a_stopped_fuse_mount_in_a_users_cache_directory_is_neither_entered_nor_measured)
{
    if (test::cannot_mount())
        return;
    Cache c;
    c.entry("imagenet");
    test::make_dir(c.user_dir + "/zz");
    c.give(c.user_dir + "/zz");
    test::make_dir(c.tmp / "content");
    test::make_file(c.tmp / "content/f");
    const std::string point = c.user_dir + "/zz";
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", point,
        [&] {
            ::alarm(30);  // a hang ends the child: "ended abnormally"
            const auto start = std::chrono::steady_clock::now();
            std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            out += "evict zz: " + evict_cache_entry(c.tier, c.owned("zz"), 10) + "\n";
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    const std::string why =
        point + ": a mount (fuse.squashfuse) at " + point + "; not entered: neither measured nor evicted";
    BOOST_TEST(text == "imagenet 1\nproblem: " + why + "\nevict zz: " + why + "\n");
}

BOOST_AUTO_TEST_CASE(a_mount_on_the_users_cache_directory_itself_leaves_all_of_it_alone)
{
    if (test::cannot_mount())
        return;
    Cache c;
    test::make_dir(c.tmp / "content");
    test::make_dir(c.tmp / "content/imagenet");
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", c.user_dir,
        [&] {
            ::alarm(30);
            const auto start = std::chrono::steady_clock::now();
            std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            out += "evict imagenet: " + evict_cache_entry(c.tier, c.owned("imagenet"), 10) + "\n";
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    const std::string why =
        c.user_dir + ": a mount (fuse.squashfuse) at " + c.user_dir + "; not entered: neither measured nor evicted";
    BOOST_TEST(text == "problem: " + why + "\nevict imagenet: " + why + "\n");
}

// The hostile case of an aside: the user's stopped FUSE server on the
// directory a prolog moved aside (it is still theirs).  Root detaches it
// from mountinfo, never asking the server, then measures what is beneath.
BOOST_AUTO_TEST_CASE(a_stopped_fuse_mount_on_a_moved_aside_directory_is_detached_then_measured)
{
    if (test::cannot_mount())
        return;
    Cache c;
    c.entry("x");
    const std::string aside = c.root + "/.cache/nobody.untrusted-20261129T080000Z-9";
    BOOST_REQUIRE(::rename(c.user_dir.c_str(), aside.c_str()) == 0);
    test::make_dir(c.tmp / "content");
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", aside,
        [&] {
            ::alarm(30);
            const auto start = std::chrono::steady_clock::now();
            const std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "nobody.untrusted-20261129T080000Z-9 1\n");
}

// Names are the user's: one made to look like the measuring child's
// answer for a huge entry must be measured as the small thing it is.
BOOST_AUTO_TEST_CASE(an_entry_name_cannot_forge_the_measurement)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::string forged = "x 999999999999 1 1\nlru9 999999999999 1 1";
    c.entry(forged);
    c.entry("lru1");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == "lru1 1\n" + forged + " 1\n");
    for (const NodeCacheEntry& e : found.entries) {
        BOOST_TEST(e.bytes < (1u << 20));
        BOOST_TEST(e.inodes == 2u);
    }
    const NodeCacheEntry& odd = found.entries.at(1);
    BOOST_TEST(entry_name(odd).find('\n') == std::string::npos, entry_name(odd));
    // Evicting it removes that entry and nothing else.
    BOOST_TEST(evict_cache_entry(c.tier, odd, 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/" + forged));
    BOOST_TEST(test::exists(c.user_dir + "/lru1/f"));
}

// A thousand links to one file are one file's worth of room: counted more,
// they would make root evict other users' entries for nothing.
BOOST_AUTO_TEST_CASE(a_file_with_many_links_counts_once)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    const std::string file = c.user_dir + "/x/big";
    test::make_file(file, std::string(64 << 10, 'l'));
    for (int i = 0; i < 100; ++i)
        BOOST_REQUIRE(::link(file.c_str(), (c.user_dir + "/x/l" + std::to_string(i)).c_str()) == 0);
    test::make_dir(c.user_dir + "/y");
    BOOST_REQUIRE(::link(file.c_str(), (c.user_dir + "/y/l").c_str()) == 0);
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_REQUIRE(found.entries.size() == 2u);
    BOOST_TEST(found.entries[0].bytes < (200u << 10));  // x: 5000 bytes and 64 KiB, once
    BOOST_TEST(found.entries[0].inodes == 3u);          // x, f, big
    BOOST_TEST(found.entries[1].inodes == 1u);          // y alone: its link was counted in x
}

// Nothing in a cache directory is out of the watermarks' reach: a name no
// dataset has is an entry of its own, and evicting an entry takes every
// name of it.
BOOST_AUTO_TEST_CASE(every_name_counts_and_an_eviction_takes_all_of_an_entry)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry(".stash");
    c.entry(".retired-x-17");
    c.entry(".retired-x-y-18");  // dataset x-y's, not x's
    test::make_file(c.user_dir + "/.ready-x.toml");
    c.give(c.user_dir + "/.ready-x.toml");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == ".stash 1\nx 1\nx-y 0\n");
    BOOST_TEST(evict_cache_entry(c.tier, c.owned("x"), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/x"));
    BOOST_TEST(!test::exists(c.user_dir + "/.retired-x-17"));
    BOOST_TEST(!test::exists(c.user_dir + "/.ready-x.toml"));
    BOOST_TEST(test::exists(c.user_dir + "/.retired-x-y-18"));
    BOOST_TEST(evict_cache_entry(c.tier, c.owned(".stash"), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/.stash"));
}

// A name whose dataset part is empty (a bare prefix, a record being
// replaced of no record) is an entry of its own too: once such names
// were neither measured nor evicted, and a user could fill the tier
// with them past every watermark.  Each is evicted with every name of it.
BOOST_AUTO_TEST_CASE(a_name_with_no_dataset_part_is_an_entry_measured_and_evicted)
{
    if (!test::is_root())
        return;
    Cache c;
    for (const std::string name : {"...tmp.x", "..partial-.tmp.x", ".ready-", ".resume-.toml"}) {
        test::make_file(c.user_dir + "/" + name, std::string(5000, 'x'));
        c.give(c.user_dir + "/" + name);
    }
    c.entry(".partial-");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == "...tmp.x 0\n.partial- 1\n.ready- 0\n.resume-.toml 0\n");
    for (const NodeCacheEntry& e : found.entries)
        BOOST_TEST(e.bytes >= 4096u, e.dataset);
    for (const NodeCacheEntry& e : found.entries)
        BOOST_TEST(evict_cache_entry(c.tier, e, 10) == "");
    BOOST_TEST(std::filesystem::is_empty(c.user_dir));
}

// What a user makes unreadable to themselves (their cache directory, an
// entry, a directory deep in one: chmod 0100, 000) is measured all the
// same: the child acting for them gives them back u+rx, as the remover
// does.  Once such a directory counted as nothing, or an entry at a few
// KiB, and the tier filled unseen (the hostile review of issue 56).
BOOST_AUTO_TEST_CASE(what_a_user_hides_from_themselves_is_measured_all_the_same)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("big");
    c.entry("deep");
    for (const std::string dir : {"/deep/a", "/deep/x", "/deep/x/y"}) {
        test::make_dir(c.user_dir + dir);
        c.give(c.user_dir + dir);
    }
    test::make_file(c.user_dir + "/deep/x/y/huge", std::string(3 << 20, 'x'));
    c.give(c.user_dir + "/deep/x/y/huge");
    test::make_file(c.user_dir + "/big/more", std::string(2 << 20, 'x'));
    c.give(c.user_dir + "/big/more");
    BOOST_REQUIRE(::chmod((c.user_dir + "/deep/a").c_str(), 0) == 0);  // listed before the deeper levels
    BOOST_REQUIRE(::chmod((c.user_dir + "/big").c_str(), 0100) == 0);
    BOOST_REQUIRE(::chmod(c.user_dir.c_str(), 0100) == 0);
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == "big 2 large\ndeep 2 large\n");
    for (const NodeCacheEntry& e : found.entries)
        BOOST_TEST(e.measured, e.dataset);
    BOOST_TEST(found.entries.at(1).bytes >= (3u << 20));
}

// A part its owner cannot read even so (root's, 0700, in their entry):
// the entry is not measured whole, but counts at least what was counted
// (once it counted as unknown, or at an older and smaller recorded size).
BOOST_AUTO_TEST_CASE(an_entry_measured_in_part_counts_what_was_counted)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    test::make_file(c.user_dir + "/x/big", std::string(2 << 20, 'x'));
    c.give(c.user_dir + "/x/big");
    test::make_dir(c.user_dir + "/x/roots");
    BOOST_REQUIRE(::chmod((c.user_dir + "/x/roots").c_str(), 0700) == 0);
    test::make_file(c.user_dir + "/x/roots/hidden", "h");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_REQUIRE(found.entries.size() == 1u);
    const NodeCacheEntry& x = found.entries[0];
    BOOST_TEST(!x.measured);
    BOOST_TEST(x.recorded);
    BOOST_TEST(x.bytes >= (2u << 20));
    BOOST_TEST(x.inodes >= 4u);  // x, f, big, roots
}

// A user's cache directory a prolog moved aside (it held a mount): all of
// it one entry of its owner's, measured and evicted as theirs, even one the
// owner opened to others (0755); one of root's is left to the admin.
BOOST_AUTO_TEST_CASE(a_cache_directory_moved_aside_is_an_entry_and_can_be_evicted)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    const std::string aside = c.root + "/.cache/nobody.untrusted-20261129T080000Z-7";
    BOOST_REQUIRE(::rename(c.user_dir.c_str(), aside.c_str()) == 0);
    BOOST_REQUIRE(::chmod(aside.c_str(), 0755) == 0);
    test::make_dir(c.root + "/.cache/root.untrusted-20261129T080000Z-8");
    // One of a uid no passwd entry names, and a file (neither made by a prolog).
    const std::string gone_user = c.root + "/.cache/gone.untrusted-20261129T080000Z-10";
    test::make_dir(gone_user, 0700);
    test::make_file(gone_user + "/f", "x");
    BOOST_REQUIRE(::chown(gone_user.c_str(), 54321, 54321) == 0 &&
                  ::chown((gone_user + "/f").c_str(), 54321, 54321) == 0);
    test::make_file(c.root + "/.cache/file.untrusted-20261129T080000Z-11", "x");
    // Not the form tier_walk gives: a user's directory, however it is named.
    test::make_dir(c.root + "/.cache/x.untrusted-yesterday", 0700);
    FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    // By owner, in name order: each owner's directory, then their asides.
    BOOST_TEST(listing(found) == "gone.untrusted-20261129T080000Z-10 1\nnobody.untrusted-20261129T080000Z-7 1\n"
                                 "problem: " +
                                     c.root +
                                     "/.cache/file.untrusted-20261129T080000Z-11: moved aside, but "
                                     "not a directory; neither measured nor evicted, left for the admin\n"
                                     "problem: " +
                                     c.root +
                                     "/.cache/root.untrusted-20261129T080000Z-8: moved aside, but "
                                     "root's; neither measured nor evicted, left for the admin\n"
                                     "problem: " +
                                     c.root + "/.cache/x.untrusted-yesterday: no such user\n");
    BOOST_REQUIRE(found.entries.size() == 2u);
    BOOST_TEST(found.entries[0].user == "uid 54321");
    BOOST_TEST(evict_cache_entry(c.tier, found.entries[0], 10) == "");
    BOOST_TEST(!test::exists(gone_user));
    found.entries.erase(found.entries.begin());
    const NodeCacheEntry& e = found.entries[0];
    BOOST_TEST(e.aside);
    BOOST_TEST(e.user == "nobody");
    BOOST_TEST(e.bytes >= 5000u);
    BOOST_TEST(e.changed > 0);
    BOOST_TEST(entry_name(e) == "nobody.untrusted-20261129T080000Z-7 (moved aside)");
    BOOST_TEST(evict_cache_entry(c.tier, e, 10) == "");
    BOOST_TEST(!test::exists(aside));
    BOOST_TEST(test::exists(c.root + "/.cache/root.untrusted-20261129T080000Z-8"));
}

// All of the measuring has one deadline, however many users' directories
// there are: those whose turn comes after it are left out, said so (only a
// child that had its share and could not list makes an entry of unknown
// size: 55-cache-attacks holds one).
BOOST_AUTO_TEST_CASE(measuring_stops_at_its_overall_deadline)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    BOOST_TEST(listing(find_cache_entries(c.tier, c.state, "n1", 10, 0)) ==
               "problem: " + c.user_dir +
                   ": not measured: the 0 s for measuring the node cache are up; its entries are left out\n");
    const FoundCacheEntries measured = find_cache_entries(c.tier, c.state, "n1", 10, 10);
    BOOST_TEST(listing(measured) == "x 1\n");
    BOOST_TEST(measured.entries.at(0).measured);
    BOOST_TEST(entry_name(c.unlisted()) == "nobody's cache directory (not listed in time)");
}

BOOST_AUTO_TEST_SUITE_END()
