#include <boost/test/unit_test.hpp>

#include "lib/strings.hpp"
#include "policies/purge.hpp"

using namespace dlstage;
using namespace dlstage::policy;

namespace {
constexpr std::int64_t kDay = 86400;
constexpr std::int64_t kNow = 1795000000;  // 2026-11-18

PurgeRule rule(int days, int warn, PurgeBy by = PurgeBy::Atime)
{
    PurgeRule r;
    r.days = days;
    r.warn_days = warn;
    r.by = by;
    return r;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(purge)

BOOST_AUTO_TEST_CASE(age_counts_from_the_time_the_site_names)
{
    const FileTimes t{100, 200, 300};
    BOOST_TEST(purge_clock(PurgeBy::Atime, t) == 100);
    BOOST_TEST(purge_clock(PurgeBy::Mtime, t) == 200);
    BOOST_TEST(purge_clock(PurgeBy::Ctime, t) == 300);
    BOOST_TEST(purge_clock(PurgeBy::Max, FileTimes{500, 200, 300}) == 500);
}

BOOST_AUTO_TEST_CASE(no_purge_no_date_and_no_warning)
{
    BOOST_TEST(!purge_date(rule(0, 0), kNow).has_value());
    BOOST_TEST(purge_warning(rule(0, 0), "d", "t", 0, kNow).reason.empty());
}

BOOST_AUTO_TEST_CASE(warns_within_warn_days_with_the_date)
{
    // Oldest file used 80 days ago: purged in 10 days, inside 14.
    const Verdict v = purge_warning(rule(90, 14), "imagenet", "scratch", kNow - 80 * kDay, kNow);
    BOOST_TEST(v.allowed);
    BOOST_TEST(v.reason.find("'imagenet'") != std::string::npos, v.reason);
    BOOST_TEST(v.reason.find(day_text(kNow + 10 * kDay)) != std::string::npos, v.reason);
    BOOST_TEST(v.reason.find("90 days by atime") != std::string::npos, v.reason);
    // 70 days ago: 20 days left, no warning.
    BOOST_TEST(purge_warning(rule(90, 14), "imagenet", "scratch", kNow - 70 * kDay, kNow).reason.empty());
    // Past the date: it may be partly gone already.
    BOOST_TEST(purge_warning(rule(90, 14), "imagenet", "scratch", kNow - 95 * kDay, kNow).reason.find("already") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(only_a_shared_tier_purged_by_mtime_gives_copies_their_own_mtimes)
{
    Tier tier;
    BOOST_TEST(keeps_source_mtimes(tier));  // a node tier
    tier.scope = Scope::Shared;
    tier.purge.days = 90;
    tier.purge.by = PurgeBy::Atime;
    BOOST_TEST(keeps_source_mtimes(tier));
    tier.purge.by = PurgeBy::Mtime;
    BOOST_TEST(!keeps_source_mtimes(tier));
    tier.purge.days = 0;  // no purge: nothing to count from
    BOOST_TEST(keeps_source_mtimes(tier));
}

BOOST_AUTO_TEST_CASE(mtimes_tell_writes_unless_a_copied_file_took_the_time_it_was_written)
{
    Tier tier;
    tier.scope = Scope::Shared;
    tier.purge.days = 90;
    tier.purge.by = PurgeBy::Mtime;
    BOOST_TEST(!mtimes_tell_writes(false, tier));  // copied files carry their own write times
    BOOST_TEST(mtimes_tell_writes(true, tier));    // unpacked: listed as written
    tier.purge.by = PurgeBy::Atime;
    BOOST_TEST(mtimes_tell_writes(false, tier));
}

BOOST_AUTO_TEST_SUITE_END()
