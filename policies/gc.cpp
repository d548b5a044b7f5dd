#include "policies/gc.hpp"

#include "policies/slurm_states.hpp"

namespace dlstage::policy {

namespace {
const char* what(GcKind kind)
{
    switch (kind) {
    case GcKind::JobDir: return "job directory";
    case GcKind::Claim: return "unfinished removal";
    case GcKind::Records: return "records";
    case GcKind::CacheEntry: return "cache entry";
    }
    return "entry";
}

Verdict cache_entry(const GcFacts& f, const GcSettings& s)
{
    if (f.in_use)
        return Verdict::refuse("in use by a running job");
    // No job can use it again: what it holds is the tier's room, and its
    // owner's next job stages anew.
    if (f.moved_aside && f.age <= s.grace)
        return Verdict::refuse("moved aside as untrusted " + age_text(f.age) + " ago, within the grace period of " +
                               age_text(s.grace) + " (gc_grace)");
    if (f.moved_aside)
        return Verdict::allow("a prolog moved it aside as untrusted (it held a mount, or another uid's); no job "
                              "can use it");
    if (f.over_watermark && !f.measured)
        return Verdict::allow("not measured in time (its size unknown), and the tier's file system says it is over "
                              "its high watermark");
    if (f.over_watermark)
        return Verdict::allow("the tier is over its high watermark and this entry was used least recently (" +
                              age_text(f.idle) + " ago)");
    // Half-written data no job will finish: the next job of its user stages
    // it anew anyway.  Whether a stager may be at it is root's knowledge
    // (its owner's jobs here), never the entry's times, which its owner
    // could keep fresh.
    if (f.unfinished && f.owner_busy)
        return Verdict::refuse("no ready record, but a job of its owner on this node may be staging it");
    if (f.unfinished)
        return Verdict::allow("a staging that did not finish left it (no ready record), and no job of its owner "
                              "runs here");
    const std::int64_t limit = std::int64_t{s.cache_idle_days} * 86400;
    if (s.cache_idle_days > 0 && f.idle > limit)
        return Verdict::allow("unused for " + age_text(f.idle) + " (more than " + std::to_string(s.cache_idle_days) +
                              " d)");
    return Verdict::refuse("used " + age_text(f.idle) + " ago and the tier is below its watermark");
}
}  // namespace

JobState job_state_from_slurm(std::string_view state)
{
    return slurm_state_has_ended(state) ? JobState::Ended : JobState::Present;
}

std::string age_text(std::int64_t seconds)
{
    if (seconds < 0)
        seconds = 0;
    if (seconds >= 2 * 86400)
        return std::to_string(seconds / 86400) + " d";
    if (seconds >= 2 * 3600)
        return std::to_string(seconds / 3600) + " h";
    if (seconds >= 2 * 60)
        return std::to_string(seconds / 60) + " min";
    return std::to_string(seconds) + " s";
}

bool cache_use_holds(bool started, bool processes_here, std::int64_t record_age, const GcSettings& s)
{
    return started || processes_here || record_age <= s.grace;
}

bool job_started(std::string_view state)
{
    // Every state that is not final counts as started, but a pending one:
    // an unknown word a later Slurm adds keeps the entry.
    for (const char* waiting : {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT", "RESV_DEL_HOLD"})
        if (state == waiting)
            return false;
    return !slurm_state_has_ended(state);
}

Verdict gc_may_remove(const GcFacts& f, const GcSettings& s)
{
    if (f.kind == GcKind::CacheEntry)
        return cache_entry(f, s);
    if (f.job == JobState::Unknown)
        return Verdict::refuse("Slurm could not say whether its job still runs");
    if (f.job == JobState::Present)
        return Verdict::refuse("its job is still known to Slurm (pending, running or completing)");
    if (f.processes_here)
        return Verdict::refuse("its job still has processes on this node (scontrol listpids)");
    if (f.kind == GcKind::Records) {
        if (s.records_days <= 0)
            return Verdict::refuse("its job ended; records are kept (gc_records_days = 0)");
        if (f.age <= std::int64_t{s.records_days} * 86400)
            return Verdict::refuse("its job ended; last written " + age_text(f.age) + " ago, kept for " +
                                   std::to_string(s.records_days) + " d (gc_records_days)");
        return Verdict::allow("its job ended; last written " + age_text(f.age) + " ago (more than " +
                              std::to_string(s.records_days) + " d)");
    }
    if (f.mounted)
        return Verdict::allow("its job ended; a mount is left on it (detached first)");
    if (f.age <= s.grace)
        return Verdict::refuse(std::string(what(f.kind)) + " changed " + age_text(f.age) +
                               " ago, within the grace period of " + age_text(s.grace) + " (gc_grace)");
    return Verdict::allow(f.kind == GcKind::Claim
                              ? "its job ended; an earlier removal of it (an epilog's or gc's) did not finish"
                              : "its job ended (an epilog that did not finish, or a rebooted node)");
}

}  // namespace dlstage::policy
