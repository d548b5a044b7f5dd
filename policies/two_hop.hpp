// Two-hop staging (a dataset with reach = "mover"): the compute nodes
// cannot see its source, so a mover job on the mover partition copies it
// into the shared tier `via` (hop 1), and jobs stage from that copy (hop 2).
// Who reads the source, what hop 2 stages from, and whether the copy found
// at submit is good enough that no mover job is needed.  Facts in, decision
// out; mover/ gathers the facts and submits the mover job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/config_model.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

// Does a job on `partition` read the dataset's source itself?  Yes for a
// dataset the compute nodes reach, and for any job on the mover partition
// (a mover job, or a user's job there).  An unknown partition is not the
// mover's: Slurm's default partition is the compute one.
bool reads_source_here(const Dataset& dataset, const std::optional<std::string>& partition, const MoverSettings& mover);

// The dataset as hop 2 stages it: from `copy`, the user's copy in the via
// tier (a directory, or the file itself), as the copy holds it: extracted
// archives are a tree, copied shards a directory of the same shards, a
// copied image the same image.  Not from the catalog: the dataset's
// manifest describes the source, not the copy.
Dataset second_hop(const Dataset& dataset, const std::string& copy);

// What submit finds of the user's copy in the via tier.
struct ViaCopyFacts {
    bool has_record = false;     // the copy's record, whole and the user's
    bool same_mode = false;      // ... of a copy made in the dataset's mode
    bool in_place = false;       // the copy itself (file or directory) is there
    bool found_changed = false;  // a job found it changed since its mover job's check
    // The scan time of the dataset's manifest now, and of the one the copy
    // was last checked against (0: none; a walk).  A new scan may describe
    // a changed source: the mover checks the copy against it.
    std::int64_t manifest_scanned = 0;
    std::int64_t checked_scan = 0;
    std::optional<std::int64_t> purge_date;  // when the site's purge may start taking files
    std::int64_t now = 0;
    // The site vouches that the source never changes (immutable = true).
    // Otherwise nothing at submit can prove it unchanged since the copy
    // (the submit host cannot see it): a mover job compares it, file by
    // file, and fetches what changed.
    bool immutable = false;
};

// Allowed: the copy serves the job, no mover job (nothing reads the
// source): only a whole, unpurged copy of an immutable source.  Refused:
// why a mover job copies (or checks and repairs) it first, e.g. "there is
// no copy in scratch yet", "the source may have changed since ...".
Verdict via_copy_usable(const ViaCopyFacts& facts, const std::string& tier);

// Whether a job may wait for a mover job of the user's already in Slurm,
// in `state` (squeue's %T), rather than have one of its own: any queued or
// running one for an immutable dataset; else only one still pending, whose
// walk of the source comes after this submission (never stale: a running
// one may have compared the copy with the source before it changed).
bool may_share_mover(const Dataset& dataset, std::string_view state);

// A mover job near its time limit (its `dlstage stage` looks, launch/
// mover_limit): Slurm would end it TIMEOUT and with it every job waiting
// on afterok, although the copy resumes.  Instead it requeues itself a
// margin before the limit (its waiters' afterok holds: same job id), so
// the copy goes on in its next run; only an attempt that wrote nothing in
// a whole time limit runs out, and its waiters are ended (the copy would
// never finish: the site's [mover] time_limit is too short for it).
// A job that is no longer RUNNING (cancelled, completing: its end time is
// now) is left to end: requeued then, a cancelled mover job would run
// again and hold its waiters.
struct MoverClock {
    std::int64_t limit = 0;   // the job's time limit, seconds (0: none)
    std::int64_t left = 0;    // seconds until it
    bool progressed = false;  // this run wrote bytes of the copy
    bool running = true;      // squeue says RUNNING
};

// How long before its limit a mover job requeues itself: a tenth of the
// limit, at least 10 s (slurmctld's answer, the requeue itself) and at
// most 60 s (a longer limit is no less precise).
std::int64_t requeue_margin(std::int64_t limit);

enum class AtLimit {
    Wait,     // not yet (or no limit): look again in next_look seconds
    Requeue,  // within the margin and the copy moved on: requeue now
    RunOut,   // within the margin and nothing copied: let the limit end it
};
AtLimit mover_at_limit(const MoverClock& clock);

// Seconds until a mover job looks at its clock again: at the margin's
// start, and every 10 s at most meanwhile (an admin may shorten the limit;
// one squeue of one job); at least 1.
std::int64_t next_look(const MoverClock& clock);

// Whether hop 2 can go to `tier`: not to a node cache (the prolog looks at
// a cache entry's source, which the compute nodes cannot see).
Verdict hop_supported(const Dataset& dataset, const Tier& tier);

// The dependency of a job that waits for mover jobs: afterok on each,
// then the user's own (`theirs`, as Slurm prints it).  Refused for a list
// of the user's joined by '?' (any one satisfied): the job could then
// start before its copy is made.
Verdict dependency_with_movers(const std::vector<std::string>& movers, const std::optional<std::string>& theirs,
                               std::string& merged);

// What the jobs waiting for a mover job get, from the mover job's state and
// reason as squeue shows them now (%T, %r; "" for a job Slurm no longer
// knows).  Copied: afterok lets them start.  Waits: pending, running or
// requeued; `held` when Slurm holds it (its waiters wait with it, and are
// told so).  Ended: it ended without a copy (failed, cancelled pending or
// running, time limit, node failure, ...) and its waiters are ended, with
// `reason` ("it was cancelled") in their comment.  Gone: Slurm no longer
// knows it (ended over MinJobAge ago); Slurm counts a dependency on a job
// it has forgotten as satisfied, so its waiters start: nothing to watch.
struct MoverFate {
    enum class Kind { Waits, Copied, Ended, Gone } kind = Kind::Waits;
    bool held = false;
    std::string reason;  // Ended: why there is no copy; held: Slurm's reason
};
MoverFate mover_fate(std::string_view state, std::string_view reason);

// A node of the mover partition as Slurm describes it (sinfo: CPUs and
// RealMemory).
struct PartitionNode {
    std::string name;
    std::uint64_t cpus = 0;
    std::uint64_t memory_mib = 0;
};

// What Slurm answers when no node of a partition can give what a job asks.
inline constexpr const char* kNoNodeConfiguration = "Requested node configuration is not available";

// Can a node with `cpus` CPUs and `memory_mib` MiB run one task of a mover
// job as [mover] asks: cpus_per_task CPUs and `memory` (sbatch --mem: MiB
// unless it has a unit; "" asks none)?
bool node_fits_mover(const MoverSettings& mover, std::uint64_t cpus, std::uint64_t memory_mib);

// Do the partition's nodes give a mover job what [mover] asks, on `nodes`
// of them?  Refused, in one line naming each setting no node gives and the
// most the nodes have ("[mover] memory = \"8G\" (8192 MiB) is more than any
// node of partition 'mover' has (at most 4000 MiB, on n4): set it to 4000M
// or less"), or too few nodes that give both.  No nodes: Slurm does not
// know the partition.
Verdict mover_fits_nodes(const MoverSettings& mover, const std::vector<PartitionNode>& nodes);

}  // namespace dlstage::policy
