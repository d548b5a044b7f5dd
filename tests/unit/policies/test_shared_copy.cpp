#include <boost/test/unit_test.hpp>

#include "policies/shared_copy.hpp"

using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(shared_copy)

namespace {
CopyFacts complete()
{
    CopyFacts f;
    f.has_record = f.same_source = f.has_listing = f.repairable = true;
    f.entries = 100;
    return f;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_complete_copy_of_an_unchanged_source_is_reused)
{
    BOOST_TEST(static_cast<int>(decide_copy(complete()).action) == static_cast<int>(CopyAction::Reuse));
}

BOOST_AUTO_TEST_CASE(no_record_or_a_changed_source_stages_again)
{
    CopyFacts f = complete();
    f.has_record = false;
    BOOST_TEST(static_cast<int>(decide_copy(f).action) == static_cast<int>(CopyAction::Stage));
    f = complete();
    f.same_source = false;
    const CopyDecision d = decide_copy(f);
    BOOST_TEST(static_cast<int>(d.action) == static_cast<int>(CopyAction::Stage));
    BOOST_TEST(d.reason.find("source changed") != std::string::npos);
    f = complete();
    f.has_listing = false;
    BOOST_TEST(static_cast<int>(decide_copy(f).action) == static_cast<int>(CopyAction::Stage));
}

BOOST_AUTO_TEST_CASE(a_copy_that_keeps_its_sources_mtimes_fetches_only_what_the_source_changed)
{
    CopyFacts f = complete();
    f.same_source = false;
    f.refreshable = true;
    const CopyDecision unchanged = decide_copy(f);  // e.g. only a directory's time moved
    BOOST_TEST(static_cast<int>(unchanged.action) == static_cast<int>(CopyAction::Reuse));
    BOOST_TEST(unchanged.reason == "the copy holds every file of the source as it is now");
    f.wrong_size = 2;  // appended to, rewritten in place
    f.missing = 1;     // new at the source
    f.added = 1;       // removed from the source
    const CopyDecision changed = decide_copy(f);
    BOOST_TEST(static_cast<int>(changed.action) == static_cast<int>(CopyAction::Repair));
    BOOST_TEST(changed.reason == "the source changed since the copy was made: 1 missing, 2 truncated or changed and "
                                 "1 added of 100 entries: fetching them again");
    f.kind_changes = 1;  // a file became a directory
    const CopyDecision kind = decide_copy(f);
    BOOST_TEST(static_cast<int>(kind.action) == static_cast<int>(CopyAction::Stage));
    BOOST_TEST(
        kind.reason ==
        "the source changed since the copy was made (1 entry of another type or directory mode): staging it again");
}

BOOST_AUTO_TEST_CASE(only_a_plain_copy_that_keeps_its_sources_mtimes_is_refreshed)
{
    dlstage::Tier scratch;
    scratch.scope = dlstage::Scope::Shared;
    scratch.purge.days = 90;
    scratch.purge.by = dlstage::PurgeBy::Atime;
    BOOST_TEST(copy_refreshable(dlstage::Mode::Copy, scratch));
    BOOST_TEST(!copy_refreshable(dlstage::Mode::Extract, scratch));
    scratch.purge.by = dlstage::PurgeBy::Mtime;
    BOOST_TEST(!copy_refreshable(dlstage::Mode::Copy, scratch));
}

BOOST_AUTO_TEST_CASE(purged_files_are_repaired_in_copy_mode_and_restaged_when_unpacked)
{
    CopyFacts f = complete();
    f.missing = 3;
    f.wrong_size = 1;
    CopyDecision d = decide_copy(f);
    BOOST_TEST(static_cast<int>(d.action) == static_cast<int>(CopyAction::Repair));
    BOOST_TEST(d.reason.find("3 missing, 1 truncated or changed and 0 added") != std::string::npos, d.reason);
    f.repairable = false;
    d = decide_copy(f);
    BOOST_TEST(static_cast<int>(d.action) == static_cast<int>(CopyAction::Stage));
    BOOST_TEST(d.reason.find("unpacked") != std::string::npos, d.reason);
}

BOOST_AUTO_TEST_CASE(what_a_job_added_is_removed_in_any_mode_and_counted_with_the_rest)
{
    CopyFacts f = complete();
    f.added = 2;
    CopyDecision d = decide_copy(f);
    BOOST_TEST(static_cast<int>(d.action) == static_cast<int>(CopyAction::Repair));
    BOOST_TEST(d.reason.find("0 missing, 0 truncated or changed and 2 added of 100 entries: removing") !=
                   std::string::npos,
               d.reason);
    f.repairable = false;  // an unpacked copy: removing needs no source either
    BOOST_TEST(static_cast<int>(decide_copy(f).action) == static_cast<int>(CopyAction::Repair));
    f.wrong_size = 1;  // ... but a changed file of one is staged again
    BOOST_TEST(static_cast<int>(decide_copy(f).action) == static_cast<int>(CopyAction::Stage));
    f.repairable = true;
    BOOST_TEST(static_cast<int>(decide_copy(f).action) == static_cast<int>(CopyAction::Repair));
}

BOOST_AUTO_TEST_CASE(entries_someone_else_owns_stage_the_copy_again_whatever_their_sizes)
{
    CopyFacts f = complete();
    f.foreign = 2;
    f.missing = 2;
    const CopyDecision d = decide_copy(f);
    BOOST_TEST(static_cast<int>(d.action) == static_cast<int>(CopyAction::Stage));
    BOOST_TEST(d.reason.find("2 entries of the copy belong to someone else") != std::string::npos, d.reason);
}

namespace {
LockFacts held()
{
    LockFacts f;
    f.holder_job = "7";
    f.holder_host = "n1";
    f.holder_pid = 4242;
    f.my_job = "8";
    f.my_host = "n2";
    f.silent_s = 3;
    return f;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_live_holder_keeps_its_lock_and_is_named)
{
    LockFacts f = held();
    f.job_running = true;
    const Verdict v = lock_is_stale(f);
    BOOST_TEST(!v.allowed);
    BOOST_TEST(v.reason == "job 7 on n1 (pid 4242) is staging it");
    // Slurm did not answer: still not broken.
    f.job_running.reset();
    BOOST_TEST(!lock_is_stale(f).allowed);
}

BOOST_AUTO_TEST_CASE(a_lock_is_stale_when_its_job_ended_its_process_died_or_it_fell_silent)
{
    LockFacts f = held();
    f.job_running = false;
    BOOST_TEST(lock_is_stale(f).reason.find("job 7 has ended") != std::string::npos);

    f = held();
    f.my_host = "n1";
    f.holder_alive = false;
    BOOST_TEST(lock_is_stale(f).allowed);
    f.holder_alive = true;
    f.job_running = true;
    BOOST_TEST(!lock_is_stale(f).allowed);

    f = held();
    f.my_job = "7";
    BOOST_TEST(lock_is_stale(f).reason.find("earlier attempt") != std::string::npos);

    f = held();
    f.job_running = true;
    f.silent_s = 301;
    BOOST_TEST(lock_is_stale(f).reason.find("silent for 301 s") != std::string::npos);
}

namespace {
PartialFacts resumable()
{
    PartialFacts f;
    f.partial = f.has_record = f.same_source = f.same_mode = f.refreshable = true;
    f.began_by = "41";
    return f;
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_unfinished_copy_of_the_same_source_is_gone_on_from)
{
    const Verdict v = may_resume(resumable());
    BOOST_TEST(v.allowed);
    BOOST_TEST(v.reason == "going on from the copy job 41 began");
}

BOOST_AUTO_TEST_CASE(an_unfinished_copy_made_while_walking_is_gone_on_from_unless_an_entry_changed_kind)
{
    PartialFacts f = resumable();
    f.same_source = false;  // its record holds no identity: the walk had not ended
    f.walked = true;
    BOOST_TEST(may_resume(f).allowed);
    f.kind_changes = 1;
    const Verdict v = may_resume(f);
    BOOST_TEST(!v.allowed);
    BOOST_TEST(v.reason == "the source changed since an unfinished copy began: staging it whole");
}

BOOST_AUTO_TEST_CASE(nothing_unfinished_is_no_resume_and_says_nothing)
{
    PartialFacts f = resumable();
    f.partial = false;
    BOOST_TEST(!may_resume(f).allowed);
    BOOST_TEST(may_resume(f).reason.empty());
}

BOOST_AUTO_TEST_CASE(an_unfinished_copy_is_staged_whole_unless_each_file_can_be_told_whole)
{
    const auto refused = [](void (*change)(PartialFacts&), const char* why) {
        PartialFacts f = resumable();
        change(f);
        const Verdict v = may_resume(f);
        BOOST_TEST(!v.allowed);
        BOOST_TEST(v.reason.find(why) != std::string::npos, v.reason);
        BOOST_TEST(v.reason.find(": staging it whole") != std::string::npos);
    };
    refused([](PartialFacts& f) { f.has_record = false; }, "does not say what it is a copy of");
    refused([](PartialFacts& f) { f.same_mode = false; }, "another mode");
    refused([](PartialFacts& f) { f.same_source = false; }, "the source changed");
    refused([](PartialFacts& f) { f.refreshable = false; }, "purged by mtime");
}

BOOST_AUTO_TEST_CASE(a_change_a_running_reader_could_see_is_made_beside_the_copy)
{
    BOOST_TEST(change_beside({true, 1, true}));
    BOOST_TEST(change_beside({true, 0, false}));   // Slurm did not say: a reader may run
    BOOST_TEST(!change_beside({true, 0, true}));   // nobody reads it: in place
    BOOST_TEST(!change_beside({false, 3, true}));  // only what was missing comes back
}

BOOST_AUTO_TEST_CASE(an_earlier_copy_goes_only_once_none_of_its_readers_runs)
{
    BOOST_TEST(old_copy_may_go(0, true));
    BOOST_TEST(!old_copy_may_go(1, true));
    BOOST_TEST(!old_copy_may_go(0, false));
}

BOOST_AUTO_TEST_SUITE_END()
