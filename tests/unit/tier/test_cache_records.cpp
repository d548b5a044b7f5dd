// tier/cache_records: root's records of a node cache and its lock.  Root
// only: the records are root's.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <ctime>
#include <set>
#include <sys/stat.h>
#include <vector>

#include "tests/unit/support/cache_fixtures.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tier/cache_records.hpp"

using namespace dlstage;
using test::Cache;
using test::listing;
using test::seconds_since;

BOOST_AUTO_TEST_SUITE(cache_records)

BOOST_AUTO_TEST_CASE(the_lock_is_waited_for_with_a_deadline)
{
    if (!test::is_root())
        return;
    Cache c;
    {
        const CacheLock held(c.state, "n1", 1);
        const auto start = std::chrono::steady_clock::now();
        const std::string error = test::error_of([&] { const CacheLock second(c.state, "n1", 1); });
        const double waited = seconds_since(start);
        BOOST_TEST(error == "the node cache lock " + c.state +
                                "/cache/n1/lock is still held after 1 s (a prolog, an "
                                "epilog or another gc on this node)");
        BOOST_TEST(waited >= 0.9);
        BOOST_TEST(waited < 5.0);
    }
    BOOST_TEST(test::error_of([&] { const CacheLock again(c.state, "n1", 1); }) == "");
}

// Measuring goes without the lock: whoever evicts compares this number,
// taken before measuring, with the one under the lock.
BOOST_AUTO_TEST_CASE(each_eviction_changes_the_generation)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::uint64_t before = eviction_generation(c.state, "n1");
    BOOST_TEST(before == 0u);
    count_eviction(c.state, "n1");
    const std::uint64_t once = eviction_generation(c.state, "n1");
    count_eviction(c.state, "n1");
    BOOST_TEST(once != before);
    BOOST_TEST(eviction_generation(c.state, "n1") != once);
    BOOST_TEST(eviction_generation(c.state, "n2") == 0u);  // per node
}

// Root's records name users' datasets and jobs: private, whatever an
// earlier release left; each job's record carries when it was written.
BOOST_AUTO_TEST_CASE(roots_records_are_private_and_carry_when_they_were_written)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::string base = c.state + "/cache/n1";
    test::make_dir(c.state + "/cache");
    test::make_dir(base, 0755);
    test::make_dir(base + "/last-use", 0755);
    test::make_file(base + "/last-use/cache.65534.old", "");
    BOOST_REQUIRE(::chmod((base + "/last-use/cache.65534.old").c_str(), 0644) == 0);
    const auto before = static_cast<std::int64_t>(::time(nullptr));
    record_cache_use(c.state, "n1", "42", {{"cache", "nobody", c.nobody->pw_uid, "old", {}, {}}});
    const auto mode = [](const std::string& path) {
        struct stat st {};
        BOOST_REQUIRE(::lstat(path.c_str(), &st) == 0);
        return st.st_mode & 07777;
    };
    BOOST_TEST(mode(base) == 0700u);
    BOOST_TEST(mode(base + "/jobs") == 0700u);
    BOOST_TEST(mode(base + "/last-use") == 0700u);
    BOOST_TEST(mode(base + "/jobs/42.toml") == 0600u);
    BOOST_TEST(mode(base + "/last-use/cache.65534.old") == 0600u);
    const std::vector<CacheUseRecord> records = cache_use_records(c.state, "n1");
    BOOST_REQUIRE(records.size() == 1u);
    BOOST_TEST(records[0].job == "42");
    BOOST_TEST(records[0].written >= before);
    // The file's time may come from a finer clock than time()'s: compare
    // with that clock, read after the write.
    BOOST_TEST(records[0].written <=
               static_cast<std::int64_t>(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

// What a job brings, recorded with its use, is read back for the prologs
// after it, each job's use of an entry once, for the tier asked about; a
// use that did not say brings nothing known.
BOOST_AUTO_TEST_CASE(what_a_job_brings_is_recorded_with_its_use)
{
    if (!test::is_root())
        return;
    Cache c;
    CacheUse brings{"cache", "nobody", c.nobody->pw_uid, "x", std::uint64_t{5000}, std::uint64_t{7}};
    CacheUse unknown{"cache", "nobody", c.nobody->pw_uid, "y", std::nullopt, std::nullopt};
    CacheUse elsewhere{"other", "nobody", c.nobody->pw_uid, "x", std::uint64_t{1}, std::uint64_t{1}};
    record_cache_use(c.state, "n1", "42", {brings, unknown, elsewhere});
    record_cache_use(c.state, "n1", "43", {brings});
    const std::vector<CachePromise> promises = cache_promises(c.tier, c.state, "n1");
    BOOST_REQUIRE(promises.size() == 2u);
    for (const CachePromise& p : promises) {
        BOOST_TEST(p.uid == c.nobody->pw_uid);
        BOOST_TEST(p.dataset == "x");
        BOOST_TEST(p.bytes == 5000u);
        BOOST_TEST(p.inodes == 7u);
    }
    BOOST_TEST(promises[0].job == "42");
    BOOST_TEST(promises[1].job == "43");
    forget_cache_use(c.state, "n1", "42");
    BOOST_TEST(cache_promises(c.tier, c.state, "n1").size() == 1u);
}

// An entry whose turn did not come counts at its size when last measured
// (root's record), a directory not even listed at its owner's sum; the
// record follows the listing (a dataset no longer there is forgotten).
BOOST_AUTO_TEST_CASE(an_entry_not_measured_counts_at_its_recorded_size)
{
    if (!test::is_root())
        return;
    Cache c;
    std::vector<NodeCacheEntry> entries{c.owned("x"), c.owned("y")};
    entries[0].bytes = 5000;
    entries[0].inodes = 2;
    entries[0].files = 1;
    entries[1].bytes = 700;
    settle_recorded_sizes(entries, c.tier, c.state, "n1");
    BOOST_TEST(!entries[0].recorded);  // measured: as it is
    NodeCacheEntry late = c.owned("x");
    late.measured = false;
    NodeCacheEntry never = c.owned("z");
    never.measured = false;
    std::vector<NodeCacheEntry> again{late, never};
    settle_recorded_sizes(again, c.tier, c.state, "n1");
    BOOST_TEST(again[0].recorded);
    BOOST_TEST(again[0].bytes == 5000u);
    BOOST_TEST(again[0].inodes == 2u);
    BOOST_TEST(!again[1].recorded);  // never measured: unknown
    BOOST_TEST(again[1].bytes == 0u);
    // When each was last measured whole orders the next measurement: x's
    // time kept from the first (it was not measured again), z none.
    const auto when = recorded_measurements(c.tier, c.state, "n1", c.nobody->pw_uid);
    BOOST_TEST(when.count("x") == 1u);
    BOOST_TEST(when.at("x") > 0u);
    BOOST_TEST(when.count("z") == 0u);
    // y was not listed that time: forgotten; x kept at its recorded size.
    std::vector<NodeCacheEntry> whole{c.unlisted()};
    settle_recorded_sizes(whole, c.tier, c.state, "n1");
    BOOST_TEST(whole[0].recorded);
    BOOST_TEST(whole[0].bytes == 5000u);
    // Records are root's, private, one per owner and tier.
    struct stat st {};
    BOOST_REQUIRE(::stat((c.state + "/cache/n1/sizes/cache." + std::to_string(c.nobody->pw_uid)).c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u);
    BOOST_TEST(st.st_uid == 0u);
}

// An entry its measuring child counted in part before its time ran out
// counts at the more of that count and its recorded size: one that grew
// while too slow to measure hides nothing, a count cut short shrinks
// nothing.  The record keeps the more, and when it was last measured whole.
BOOST_AUTO_TEST_CASE(an_entry_counted_in_part_counts_at_least_at_its_recorded_size)
{
    if (!test::is_root())
        return;
    Cache c;
    std::vector<NodeCacheEntry> first{c.owned("grew"), c.owned("cut")};
    first[0].bytes = 1000;
    first[1].bytes = 9000;
    first[1].inodes = 9;
    settle_recorded_sizes(first, c.tier, c.state, "n1");
    const auto measured_at = recorded_measurements(c.tier, c.state, "n1", c.nobody->pw_uid);
    const auto counted_in_part = [&](const std::string& dataset, std::uint64_t bytes, std::uint64_t inodes) {
        NodeCacheEntry entry = c.owned(dataset);
        entry.measured = false;
        entry.recorded = true;
        entry.bytes = bytes;
        entry.inodes = inodes;
        return entry;
    };
    std::vector<NodeCacheEntry> later{counted_in_part("grew", 50000, 3), counted_in_part("cut", 400, 20),
                                      counted_in_part("new", 7000, 1)};
    settle_recorded_sizes(later, c.tier, c.state, "n1");
    BOOST_TEST(later[0].bytes == 50000u);  // grew past its record: the count
    BOOST_TEST(later[1].bytes == 9000u);   // counted less than recorded: the record
    BOOST_TEST(later[1].inodes == 20u);    // each figure the more of the two
    BOOST_TEST(later[2].bytes == 7000u);   // never measured whole: the count
    for (const NodeCacheEntry& e : later)
        BOOST_TEST((e.recorded && !e.measured), e.dataset);
    // Recorded at the more; each keeps its turn: those measured whole when
    // they were, the one never measured whole first.
    std::vector<NodeCacheEntry> next{c.owned("grew"), c.owned("cut"), c.owned("new")};
    for (NodeCacheEntry& e : next)
        e.measured = false;
    settle_recorded_sizes(next, c.tier, c.state, "n1");
    BOOST_TEST(next[0].bytes == 50000u);
    BOOST_TEST(next[2].bytes == 7000u);
    const auto when = recorded_measurements(c.tier, c.state, "n1", c.nobody->pw_uid);
    BOOST_TEST(when.at("grew") == measured_at.at("grew"));
    BOOST_TEST(when.at("new") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
