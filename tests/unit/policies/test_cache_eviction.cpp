#include <boost/test/unit_test.hpp>

#include <map>

#include "facts/tier_space.hpp"
#include "lib/error.hpp"
#include "policies/cache_eviction.hpp"

using namespace dlstage;
using namespace dlstage::policy;

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;

CacheEntryFacts entry(const std::string& name, std::uint64_t gib, std::int64_t last_use, bool in_use = false)
{
    return {name, gib * kGiB, gib * 1000, last_use, in_use};
}

CacheTierFacts tier_of(std::uint64_t used_gib, std::uint64_t max_gib)
{
    CacheTierFacts t;
    t.used_bytes = used_gib * kGiB;
    t.used_inodes = used_gib * 1000;
    t.max_bytes = max_gib * kGiB;
    return t;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(cache_eviction)

BOOST_AUTO_TEST_CASE(below_the_high_watermark_nothing_goes)
{
    const auto plan = plan_eviction({entry("a/x", 40, 1), entry("b/y", 40, 2)}, tier_of(80, 100), {});
    BOOST_TEST(plan.evict.empty());
    BOOST_TEST(plan.fits.allowed);
}

BOOST_AUTO_TEST_CASE(least_recently_used_first_until_below_the_low_watermark)
{
    // 95 of 100 GiB: above 90%; evict until at most 75 GiB.
    const std::vector<CacheEntryFacts> entries{entry("a/new", 30, 300), entry("b/old", 10, 100),
                                               entry("c/mid", 15, 200), entry("d/oldest", 5, 50)};
    const auto plan = plan_eviction(entries, tier_of(95, 100), {});
    // oldest (5) -> 90, old (10) -> 80, mid (15) -> 65: below 75, new stays.
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{3, 1, 2}), boost::test_tools::per_element());
    BOOST_TEST(plan.fits.allowed);
    BOOST_TEST(plan.why.at(0).find("d/oldest") != std::string::npos);
    BOOST_TEST(plan.why.at(0).find("95% of max_bytes") != std::string::npos, plan.why.at(0));
}

// An entry whose use root never recorded (no job staged it: a name the
// user made) goes first, and is said to have none, not a use in 1970.
BOOST_AUTO_TEST_CASE(an_entry_never_used_goes_first_and_says_so)
{
    const auto plan = plan_eviction({entry("a/x", 40, 100), entry("b/...tmp.x", 55, 0)}, tier_of(95, 100), {});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
    BOOST_TEST(plan.why.at(0).find("b/...tmp.x (55.0 GiB, 55000 inodes, no recorded use)") != std::string::npos,
               plan.why.at(0));
}

BOOST_AUTO_TEST_CASE(an_entry_in_use_is_never_evicted)
{
    const std::vector<CacheEntryFacts> entries{entry("a/busy-oldest", 50, 1, true), entry("b/idle", 20, 5)};
    const auto plan = plan_eviction(entries, tier_of(95, 100), {});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
    // 75 GiB left: at the low watermark, allowed.
    BOOST_TEST(plan.fits.allowed);
}

BOOST_AUTO_TEST_CASE(what_comes_in_counts_so_staging_finds_room)
{
    // 60 GiB used, a job brings 35: 95 > 90, evict down to 75 with the 35 in.
    const std::vector<CacheEntryFacts> entries{entry("a/x", 10, 1), entry("b/y", 20, 2), entry("c/z", 30, 3)};
    const auto plan = plan_eviction(entries, tier_of(60, 100), {}, {35 * kGiB, 0});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
    BOOST_TEST(plan.fits.allowed);
}

// Jobs admitted a moment before write after their prologs: what each said
// it brings counts, beyond what its entry holds now, once per entry (the
// most any job staging it said), and never the asking job's own word.
BOOST_AUTO_TEST_CASE(what_jobs_admitted_before_still_bring_counts_once_per_entry)
{
    const std::vector<PromisedUse> promised{{"10", "1/a", 100, 10},
                                            {"11", "1/a", 120, 12},
                                            {"12", "2/b", 50, 5},
                                            {"13", "2/c", 30, 3},
                                            {"20", "3/own", 999, 99}};
    std::map<std::string, HeldEntry> held{{"1/a", {20, 2, false}}, {"2/c", {40, 4, false}}};
    const Incoming coming = still_coming(promised, held, "20", {});
    BOOST_TEST(coming.bytes == 100u + 50u);  // a: 120 - 20; b: nothing yet; c: whole already
    BOOST_TEST(coming.inodes == 10u + 5u);
    BOOST_TEST(still_coming({}, held, "20", {}).bytes == 0u);
    // An entry the asking job brings too: counted once, as its own.
    BOOST_TEST(still_coming(promised, held, "20", {"2/b"}).bytes == 100u);
    // Staged (its ready record there): nothing more comes, whatever was said.
    held["1/a"].staged = true;
    BOOST_TEST(still_coming(promised, held, "20", {}).bytes == 50u);
    // Sizes a user chose (a sparse source) never wrap to a small sum.
    const std::vector<PromisedUse> huge{{"30", "4/x", UINT64_MAX - 5, 1}, {"31", "4/y", UINT64_MAX - 5, 1}};
    BOOST_TEST(still_coming(huge, {}, "20", {}).bytes == UINT64_MAX);
}

BOOST_AUTO_TEST_CASE(refused_when_entries_in_use_leave_no_room_and_nothing_is_evicted)
{
    // Evicting bob/coco would leave 110 GiB: the job cannot come in, and
    // bob keeps his entry.
    const std::vector<CacheEntryFacts> entries{entry("alice/imagenet", 70, 1, true), entry("bob/coco", 10, 2)};
    const auto plan = plan_eviction(entries, tier_of(80, 100), {}, {40 * kGiB, 0});
    BOOST_TEST(plan.evict.empty());
    BOOST_TEST(plan.why.empty());
    BOOST_TEST(!plan.fits.allowed);
    BOOST_TEST(plan.fits.reason.find("alice/imagenet") != std::string::npos, plan.fits.reason);
    BOOST_TEST(plan.fits.reason.find("110% of max_bytes") != std::string::npos, plan.fits.reason);
}

BOOST_AUTO_TEST_CASE(a_refusal_names_only_the_jobs_own_users_entries_and_counts_the_rest)
{
    std::vector<CacheEntryFacts> entries{entry("alice/imagenet", 40, 1, true), entry("bob/secret", 20, 2, true),
                                         entry("carol/x", 15, 3, true)};
    entries[1].shown = false;
    entries[2].shown = false;
    const auto plan = plan_eviction(entries, tier_of(80, 100), {}, {40 * kGiB, 0});
    BOOST_TEST(!plan.fits.allowed);
    BOOST_TEST(plan.fits.reason.find("; in use by running jobs: alice/imagenet, 2 entries of other users") !=
                   std::string::npos,
               plan.fits.reason);
    BOOST_TEST(plan.fits.reason.find("bob") == std::string::npos, plan.fits.reason);
}

BOOST_AUTO_TEST_CASE(a_job_larger_than_the_tier_evicts_nothing)
{
    // Whatever the job claims past the tier's size, no entry goes for it.
    const std::vector<CacheEntryFacts> entries{entry("a/x", 10, 1), entry("b/y", 20, 2)};
    const auto plan = plan_eviction(entries, tier_of(30, 100), {}, {101 * kGiB, 0});
    BOOST_TEST(plan.evict.empty());
    BOOST_TEST(!plan.fits.allowed);
    // One that fits once the unused entries are gone evicts them.
    const auto fits = plan_eviction(entries, tier_of(30, 100), {}, {99 * kGiB, 0});
    BOOST_TEST(fits.evict.size() == 2u);
    BOOST_TEST(fits.fits.allowed);
}

BOOST_AUTO_TEST_CASE(the_file_system_caps_what_the_entries_are_said_to_hold)
{
    CacheTierFacts t = tier_of(95, 100);  // measured: 95 GiB, over the mark
    TierSpace space;
    space.total_bytes = 500 * kGiB;
    space.free_bytes = 440 * kGiB;  // the file system: 60 GiB used in all
    cap_at_file_system_use(t, space);
    BOOST_TEST(t.used_bytes == 60 * kGiB);
    BOOST_TEST(plan_eviction({entry("a/x", 40, 1), entry("b/y", 55, 2)}, t, {}).evict.empty());
    // Unknown space changes nothing.
    CacheTierFacts unknown = tier_of(95, 100);
    cap_at_file_system_use(unknown, TierSpace{});
    BOOST_TEST(unknown.used_bytes == 95 * kGiB);
}

// A user's directory too slow to measure, never measured before, still
// holds its bytes: on a file system of the tier's own, what it says is
// used beyond the measured entries counts while one is not measured, and
// the unmeasured entries no job uses go, after the measured ones the
// measured usage needs.
BOOST_AUTO_TEST_CASE(entries_not_measured_are_counted_by_the_file_system_and_go)
{
    CacheEntryFacts unmeasured{"m/slow", 0, 0, 50, false, true, false};
    CacheEntryFacts busy_unmeasured{"n/busy", 0, 0, 10, true, true, false};
    const std::vector<CacheEntryFacts> entries{entry("a/x", 30, 100), unmeasured, busy_unmeasured,
                                               entry("b/y", 20, 200)};
    // 50 GiB measured; the file system, the tier's own, says 95 of its
    // 100 GiB are used.
    CacheTierFacts t = tier_of(50, 100);
    t.own_file_system = true;
    TierSpace space;
    space.total_bytes = 100 * kGiB;
    space.free_bytes = 5 * kGiB;
    count_unmeasured(t, space, true);
    BOOST_TEST(t.unmeasured_bytes == 45 * kGiB);
    auto plan = plan_eviction(entries, t, {});
    // Without it nothing would go (50 of 100); with it m/slow goes, and
    // no measured entry: their 50 GiB are below the high watermark.
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
    BOOST_TEST(plan.why.at(0) == "evict m/slow (not measured in time, its size unknown, last used 1970-01-01): its "
                                 "file system holds 45.0 GiB no measured entry explains, which takes the tier past "
                                 "90% of max_bytes (100.0 GiB)");
    BOOST_TEST(plan.fits.allowed);
    // Counted only while an entry is not measured.
    count_unmeasured(t, space, false);
    BOOST_TEST(t.unmeasured_bytes == 0u);
    BOOST_TEST(plan_eviction(entries, t, {}).evict.empty());
    // A job that brings 41 GiB (91 measured): the least recently used
    // measured entry goes first, the room the job needs, then the
    // unmeasured ones; the busy unmeasured entry's bytes are not guessed
    // at for the verdict.
    count_unmeasured(t, space, true);
    plan = plan_eviction(entries, t, {}, {41 * kGiB, 0});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
    BOOST_TEST(plan.fits.allowed);
    // Never measured entry in use: never evicted.
    for (const std::size_t i : plan.evict)
        BOOST_TEST(i != 2u);
}

// On a file system the tier shares (/dev/shm, a /local used for other
// things), what it says is used is not the tier's: charged to the entries
// nobody measured, it evicted other users' copies at will while the cache
// was far below its watermark (issue 56).  Nothing is charged to them, and
// nothing goes while the entries of known size are below the mark.
BOOST_AUTO_TEST_CASE(on_a_shared_file_system_an_unmeasured_entry_is_not_charged_its_use)
{
    const CacheEntryFacts slow{"victim/big", 0, 0, 50, false, false, false};
    const std::vector<CacheEntryFacts> entries{entry("a/x", 10, 100), slow};
    CacheTierFacts t = tier_of(10, 100);  // 10 of 100 GiB measured
    TierSpace space;                      // the shared file system: 900 of 1000 GiB used
    space.total_bytes = 1000 * kGiB;
    space.free_bytes = 100 * kGiB;
    count_unmeasured(t, space, true);
    BOOST_TEST(t.unmeasured_bytes == 0u);
    BOOST_TEST(plan_eviction(entries, t, {}).evict.empty());
    // Over the mark by the known sizes, the unknown one still stays: what it
    // gives back nobody can tell, and the file system cannot say.
    const auto plan = plan_eviction(entries, tier_of(95, 100), {});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{0}), boost::test_tools::per_element());
}

// Not measured in time but measured before: counted at its recorded size,
// so nothing goes under the mark; over it, it goes before the measured
// ones (it may hold more than recorded: being slow to measure gains
// nothing), least recently used first among each.
BOOST_AUTO_TEST_CASE(an_entry_at_its_recorded_size_counts_and_goes_first_once_over)
{
    CacheEntryFacts recorded{"slow/lru3", 25 * kGiB, 1, 300, false, true, false, true};
    const std::vector<CacheEntryFacts> entries{entry("a/lru2", 15, 100), recorded};
    BOOST_TEST(plan_eviction(entries, tier_of(40, 100), {}).evict.empty());
    // 105 of 100 with a job's 65: the recorded one first, though used later.
    const auto plan = plan_eviction(entries, tier_of(40, 100), {}, {65 * kGiB, 0});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1, 0}), boost::test_tools::per_element());
    BOOST_TEST(plan.why.at(0).find("slow/lru3 (25.0 GiB, 1 inodes at least, not measured whole in time") !=
                   std::string::npos,
               plan.why.at(0));
    // It alone makes room enough (95 -> 70, below 75): the measured one stays.
    const auto one = plan_eviction(entries, tier_of(40, 100), {}, {55 * kGiB, 0});
    BOOST_TEST(one.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
}

// An entry not measured in time may have grown past its recorded size
// unseen (a user keeping it slow to measure, the hostile review): on a file
// system of the tier's own, what it says beyond the known sizes counts, and
// the entry goes, the file system asked first; on a shared one it does not.
BOOST_AUTO_TEST_CASE(on_its_own_file_system_an_entry_grown_past_its_record_goes)
{
    const CacheEntryFacts grown{"slow/b", 1 * kGiB, 1, 50, false, true, false, true};
    const std::vector<CacheEntryFacts> entries{entry("a/x", 10, 100), grown};
    CacheTierFacts t = tier_of(11, 100);  // 11 of 100 GiB known; the file system says 95
    TierSpace space;
    space.total_bytes = 100 * kGiB;
    space.free_bytes = 5 * kGiB;
    count_unmeasured(t, space, true);
    BOOST_TEST(t.unmeasured_bytes == 0u);  // shared: its use is not the tier's
    BOOST_TEST(plan_eviction(entries, t, {}).evict.empty());
    t.own_file_system = true;
    count_unmeasured(t, space, true);
    BOOST_TEST(t.unmeasured_bytes == 84 * kGiB);
    const auto plan = plan_eviction(entries, t, {});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
    BOOST_TEST(plan.ask_file_system == (std::vector<bool>{true}), boost::test_tools::per_element());
    BOOST_TEST(plan.why.at(0).find("slow/b (not measured in time, at least 1.0 GiB") != std::string::npos,
               plan.why.at(0));
}

// Nobody knows what an unmeasured entry gives back: before each, the file
// system is asked again, and once it is below the low watermark with what
// comes in, no more go.
BOOST_AUTO_TEST_CASE(unmeasured_entries_go_while_the_file_system_is_over_the_low_watermark)
{
    const CacheTierFacts t = tier_of(10, 100);
    TierSpace now;
    now.total_bytes = 100 * kGiB;
    now.free_bytes = 20 * kGiB;  // 80 used: over 75
    BOOST_TEST(over_low_by_file_system(t, now, {}));
    now.free_bytes = 26 * kGiB;  // 74 used
    BOOST_TEST(!over_low_by_file_system(t, now, {}));
    BOOST_TEST(over_low_by_file_system(t, now, {}, {2 * kGiB, 0}));  // with what comes in: 76
    now = TierSpace{};                                               // the file system could not say
    BOOST_TEST(!over_low_by_file_system(t, now, {}));
}

BOOST_AUTO_TEST_CASE(inodes_count_like_bytes)
{
    CacheTierFacts t;
    t.used_bytes = 1;
    t.used_inodes = 950;
    t.max_inodes = 1000;
    const std::vector<CacheEntryFacts> entries{{"a/small-files", 1, 300, 10, false}, {"b/more", 1, 100, 10, false}};
    const auto plan = plan_eviction(entries, t, {0.9, 0.5});
    // 950 -> 640 after both: still above 500, but nothing else to evict;
    // 640 fits under the limit itself.
    BOOST_TEST(plan.evict.size() == 2u);
    BOOST_TEST(plan.fits.allowed);
    BOOST_TEST(plan.why.at(0).find("max_inodes") != std::string::npos, plan.why.at(0));
}

BOOST_AUTO_TEST_CASE(no_limits_no_eviction)
{
    CacheTierFacts t;
    t.used_bytes = 1ull << 50;
    const auto plan = plan_eviction({entry("a/x", 1, 1)}, t, {});
    BOOST_TEST(plan.evict.empty());
    BOOST_TEST(plan.fits.allowed);
}

BOOST_AUTO_TEST_CASE(equal_last_use_decided_by_name_the_same_everywhere)
{
    const std::vector<CacheEntryFacts> entries{entry("b/y", 10, 7), entry("a/x", 10, 7)};
    const auto plan = plan_eviction(entries, tier_of(95, 100), {0.9, 0.85});
    BOOST_TEST(plan.evict == (std::vector<std::size_t>{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
