#include "policies/shared_copy.hpp"

#include "policies/purge.hpp"

namespace dlstage::policy {

bool copy_refreshable(Mode mode, const Tier& tier)
{
    return mode == Mode::Copy && keeps_source_mtimes(tier);
}

Verdict may_resume(const PartialFacts& facts)
{
    if (!facts.partial)
        return Verdict::refuse("");
    const std::string whole = ": staging it whole";
    if (!facts.refreshable)
        return Verdict::refuse("an unfinished copy cannot tell its whole files from those cut off (an unpacked "
                               "copy, or a tier purged by mtime, whose copies do not keep the source's mtimes)" +
                               whole);
    if (!facts.has_record)
        return Verdict::refuse("an unfinished copy does not say what it is a copy of" + whole);
    if (!facts.same_mode)
        return Verdict::refuse("an unfinished copy was made in another mode" + whole);
    if (facts.walked ? facts.kind_changes > 0 : !facts.same_source)
        return Verdict::refuse("the source changed since an unfinished copy began" + whole);
    return Verdict::allow("going on from the copy job " + facts.began_by + " began");
}

bool change_beside(const ChangeFacts& facts)
{
    return facts.rewrites && (facts.live_readers > 0 || !facts.readers_known);
}

bool old_copy_may_go(std::uint64_t live_readers, bool readers_known)
{
    return readers_known && live_readers == 0;
}

CopyDecision decide_copy(const CopyFacts& facts)
{
    if (!facts.has_record)
        return {CopyAction::Stage, "no complete copy yet"};
    if (!facts.same_source && !facts.refreshable)
        return {CopyAction::Stage, "the source changed since the copy was made: staging it again"};
    if (!facts.has_listing)
        return {CopyAction::Stage, "the list of what the copy holds is gone: staging it again"};
    if (!facts.same_source && facts.kind_changes > 0)
        return {CopyAction::Stage, "the source changed since the copy was made (" + std::to_string(facts.kind_changes) +
                                       (facts.kind_changes == 1 ? " entry" : " entries") +
                                       " of another type or directory mode): staging it again"};
    if (facts.foreign > 0)
        return {CopyAction::Stage, std::to_string(facts.foreign) +
                                       " entries of the copy belong to someone else (was the directory writable to "
                                       "others?): staging it again"};
    const std::uint64_t bad = facts.missing + facts.wrong_size;
    if (bad == 0 && facts.added == 0)
        return {CopyAction::Reuse, facts.same_source ? "the copy is complete and the source unchanged"
                                                     : "the copy holds every file of the source as it is now"};
    const std::string count = (facts.same_source ? "" : "the source changed since the copy was made: ") +
                              std::to_string(facts.missing) + " missing, " + std::to_string(facts.wrong_size) +
                              " truncated or changed and " + std::to_string(facts.added) + " added of " +
                              std::to_string(facts.entries) + " entries";
    // What a job added goes, in any mode.  A purge takes files one by one;
    // in copy mode each comes back alone.  An unpacked archive cannot say
    // which archive held a file: all again.
    if (bad == 0)
        return {CopyAction::Repair, count + ": removing what was added"};
    if (facts.repairable)
        return {CopyAction::Repair, count + ": fetching them again"};
    return {CopyAction::Stage, count + " in an unpacked copy: staging it again"};
}

Verdict lock_is_stale(const LockFacts& facts)
{
    const std::string holder =
        "job " + facts.holder_job + " on " + facts.holder_host + " (pid " + std::to_string(facts.holder_pid) + ")";
    if (facts.file_uid >= 0 && facts.file_uid != facts.my_uid)
        return Verdict::allow("it belongs to uid " + std::to_string(facts.file_uid) +
                              ", not to you: none of your jobs holds it");
    // A relaunch of the stager in the same job, or a job run again under
    // its id: the earlier attempt is over by the time this one runs.
    if (!facts.holder_job.empty() && facts.holder_job == facts.my_job)
        return Verdict::allow("left by an earlier attempt of this job (" + holder + ")");
    if (facts.holder_host == facts.my_host && facts.holder_alive && !*facts.holder_alive)
        return Verdict::allow("its holder, " + holder + ", is gone");
    if (facts.job_running && !*facts.job_running)
        return Verdict::allow("its holder's job " + facts.holder_job + " has ended");
    if (facts.silent_s > facts.silence_limit_s)
        return Verdict::allow("its holder, " + holder + ", has been silent for " + std::to_string(facts.silent_s) +
                              " s");
    return Verdict::refuse(holder + " is staging it");
}

}  // namespace dlstage::policy
