#include <boost/test/unit_test.hpp>

#include "policies/gc.hpp"

using namespace dlstage::policy;

namespace {
GcFacts ended(GcKind kind, std::int64_t age)
{
    GcFacts f;
    f.kind = kind;
    f.job = JobState::Ended;
    f.age = age;
    return f;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(gc)

BOOST_AUTO_TEST_CASE(an_ended_jobs_old_directory_and_claim_go)
{
    const GcSettings s;
    const Verdict dir = gc_may_remove(ended(GcKind::JobDir, 3600), s);
    BOOST_TEST(dir.allowed);
    BOOST_TEST(dir.reason == "its job ended (an epilog that did not finish, or a rebooted node)");
    const Verdict claim = gc_may_remove(ended(GcKind::Claim, 3600), s);
    BOOST_TEST(claim.allowed);
    BOOST_TEST(claim.reason == "its job ended; an earlier removal of it (an epilog's or gc's) did not finish");
}

BOOST_AUTO_TEST_CASE(a_job_slurm_still_lists_keeps_everything_however_old)
{
    GcSettings s;
    s.records_days = 1;
    for (const GcKind kind : {GcKind::JobDir, GcKind::Claim, GcKind::Records}) {
        GcFacts f = ended(kind, 400 * 86400);
        f.job = JobState::Present;
        f.mounted = true;
        const Verdict v = gc_may_remove(f, s);
        BOOST_TEST(!v.allowed);
        BOOST_TEST(v.reason == "its job is still known to Slurm (pending, running or completing)");
    }
}

BOOST_AUTO_TEST_CASE(a_job_with_processes_on_this_node_keeps_everything_though_slurmctld_is_done)
{
    GcSettings s;
    s.records_days = 1;
    for (const GcKind kind : {GcKind::JobDir, GcKind::Claim, GcKind::Records}) {
        GcFacts f = ended(kind, 400 * 86400);
        f.processes_here = true;
        const Verdict v = gc_may_remove(f, s);
        BOOST_TEST(!v.allowed);
        BOOST_TEST(v.reason == "its job still has processes on this node (scontrol listpids)");
    }
}

BOOST_AUTO_TEST_CASE(without_slurms_answer_nothing_goes)
{
    for (const GcKind kind : {GcKind::JobDir, GcKind::Claim, GcKind::Records}) {
        GcFacts f = ended(kind, 400 * 86400);
        f.job = JobState::Unknown;
        BOOST_TEST(!gc_may_remove(f, GcSettings{}).allowed);
    }
}

BOOST_AUTO_TEST_CASE(a_directory_within_the_grace_period_stays)
{
    GcSettings s;
    s.grace = 300;
    BOOST_TEST(!gc_may_remove(ended(GcKind::JobDir, 300), s).allowed);
    BOOST_TEST(gc_may_remove(ended(GcKind::JobDir, 301), s).allowed);
    BOOST_TEST(gc_may_remove(ended(GcKind::JobDir, 10), s).reason ==
               "job directory changed 10 s ago, within the grace period of 5 min (gc_grace)");
    // Made after Slurm was asked (a job too new for its answer): never,
    // even without a grace period.
    s.grace = 0;
    BOOST_TEST(!gc_may_remove(ended(GcKind::JobDir, -2), s).allowed);
    BOOST_TEST(!gc_may_remove(ended(GcKind::Claim, 0), s).allowed);
    BOOST_TEST(gc_may_remove(ended(GcKind::Claim, 1), s).allowed);
}

BOOST_AUTO_TEST_CASE(a_mount_left_on_an_ended_jobs_directory_does_not_hide_it)
{
    GcFacts f = ended(GcKind::JobDir, 0);  // the mount's times say nothing
    f.mounted = true;
    const Verdict v = gc_may_remove(f, GcSettings{});
    BOOST_TEST(v.allowed);
    BOOST_TEST(v.reason == "its job ended; a mount is left on it (detached first)");
}

BOOST_AUTO_TEST_CASE(records_go_after_gc_records_days_and_never_with_zero)
{
    GcSettings s;
    s.records_days = 30;
    BOOST_TEST(!gc_may_remove(ended(GcKind::Records, 30 * 86400), s).allowed);
    const Verdict old = gc_may_remove(ended(GcKind::Records, 31 * 86400), s);
    BOOST_TEST(old.allowed);
    BOOST_TEST(old.reason == "its job ended; last written 31 d ago (more than 30 d)");
    BOOST_TEST(gc_may_remove(ended(GcKind::Records, 2 * 86400), s).reason ==
               "its job ended; last written 2 d ago, kept for 30 d (gc_records_days)");
    s.records_days = 0;
    const Verdict never = gc_may_remove(ended(GcKind::Records, 4000 * 86400), s);
    BOOST_TEST(!never.allowed);
    BOOST_TEST(never.reason == "its job ended; records are kept (gc_records_days = 0)");
}

BOOST_AUTO_TEST_CASE(cache_entries_in_use_stay_idle_ones_go)
{
    GcSettings s;
    s.cache_idle_days = 7;
    GcFacts f;
    f.kind = GcKind::CacheEntry;
    f.idle = 8 * 86400;
    BOOST_TEST(gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason == "unused for 8 d (more than 7 d)");
    f.in_use = true;
    f.over_watermark = true;
    BOOST_TEST(!gc_may_remove(f, s).allowed);  // in use beats everything
    BOOST_TEST(gc_may_remove(f, s).reason == "in use by a running job");
    f.in_use = false;
    f.idle = 3600;
    BOOST_TEST(gc_may_remove(f, s).allowed);  // the watermark evicts the least recently used
    f.over_watermark = false;
    BOOST_TEST(!gc_may_remove(f, s).allowed);
    s.cache_idle_days = 0;
    f.idle = 4000 * 86400;
    BOOST_TEST(!gc_may_remove(f, s).allowed);  // 0: only the watermark evicts
}

BOOST_AUTO_TEST_CASE(an_unfinished_cache_entry_goes_unless_a_job_stages_it)
{
    GcSettings s;  // cache_idle_days = 0: only the watermark would evict a finished one
    GcFacts f;
    f.kind = GcKind::CacheEntry;
    f.idle = 60;
    f.unfinished = true;
    f.age = 0;  // its owner touched it just now: that keeps nothing
    BOOST_TEST(gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason ==
               "a staging that did not finish left it (no ready record), and no job of its owner runs here");
    f.in_use = true;  // the job staging it now
    BOOST_TEST(!gc_may_remove(f, s).allowed);
    f.in_use = false;
    f.owner_busy = true;  // a job of its owner here (`dlstage stage` by hand may be at it)
    BOOST_TEST(!gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason == "no ready record, but a job of its owner on this node may be staging it");
    f.over_watermark = true;  // the watermark comes first, as for any entry no job uses
    BOOST_TEST(gc_may_remove(f, s).allowed);
    f.over_watermark = false;
    f.owner_busy = false;
    f.unfinished = false;
    BOOST_TEST(!gc_may_remove(f, s).allowed);
}

BOOST_AUTO_TEST_CASE(an_entry_not_measured_goes_over_the_watermark_unless_in_use)
{
    GcSettings s;
    GcFacts f;
    f.kind = GcKind::CacheEntry;
    f.measured = false;
    BOOST_TEST(!gc_may_remove(f, s).allowed);
    f.over_watermark = true;
    BOOST_TEST(gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason ==
               "not measured in time (its size unknown), and the tier's file system says it is over its high "
               "watermark");
    f.in_use = true;
    BOOST_TEST(!gc_may_remove(f, s).allowed);
}

BOOST_AUTO_TEST_CASE(a_cache_directory_moved_aside_goes_after_the_grace)
{
    GcSettings s;
    GcFacts f;
    f.kind = GcKind::CacheEntry;
    f.moved_aside = true;
    f.age = 300;
    BOOST_TEST(!gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason == "moved aside as untrusted 5 min ago, within the grace period of 5 min "
                                             "(gc_grace)");
    f.age = 301;
    BOOST_TEST(gc_may_remove(f, s).allowed);
    BOOST_TEST(gc_may_remove(f, s).reason ==
               "a prolog moved it aside as untrusted (it held a mount, or another uid's); no job can use it");
}

BOOST_AUTO_TEST_CASE(a_cache_use_holds_while_slurm_lists_the_job_or_its_record_is_young)
{
    GcSettings s;  // grace 300 s
    BOOST_TEST(cache_use_holds(true, false, 86400, s));
    BOOST_TEST(cache_use_holds(false, true, 86400, s));  // processes here
    BOOST_TEST(!cache_use_holds(false, false, 301, s));
    // Recorded around the question, or after it: a job Slurm's answer missed.
    BOOST_TEST(cache_use_holds(false, false, 300, s));
    BOOST_TEST(cache_use_holds(false, false, -5, s));
    // A job requeued and held: pending, its old use holds nothing.
    for (const char* state : {"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STAGE_OUT", "SOME_NEW_STATE"})
        BOOST_TEST(job_started(state), state);
    for (const char* state : {"PENDING", "REQUEUE_HOLD", "REQUEUED", "COMPLETED", "CANCELLED", "FAILED"})
        BOOST_TEST(!job_started(state), state);
}

BOOST_AUTO_TEST_CASE(ages_read_in_the_largest_whole_unit)
{
    BOOST_TEST(age_text(-5) == "0 s");
    BOOST_TEST(age_text(119) == "119 s");
    BOOST_TEST(age_text(120) == "2 min");
    BOOST_TEST(age_text(7199) == "119 min");
    BOOST_TEST(age_text(7200) == "2 h");
    BOOST_TEST(age_text(3 * 86400 + 5) == "3 d");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(gc_slurm_states)

BOOST_AUTO_TEST_CASE(only_final_states_end_a_job)
{
    for (const char* state : {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                              "DEADLINE", "OUT_OF_MEMORY"})
        BOOST_TEST((job_state_from_slurm(state) == JobState::Ended), state);
    for (const char* state : {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING",
                              "SIGNALING", "STAGE_OUT", "STOPPED", "SOMETHING_NEW", "", "completed"})
        BOOST_TEST((job_state_from_slurm(state) == JobState::Present), state);
}

BOOST_AUTO_TEST_SUITE_END()
