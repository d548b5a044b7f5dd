// Which entries of a node cache (`cleanup = "cache"`) to evict: least
// recently used first, never one a running job on the node uses, once the
// tier's usage of bytes or of inodes passed its high watermark, until both
// are below the low one.  A job about to stage counts what it brings, so
// staging never fails for want of space that evicting unused entries would
// give.  Facts in, plan out: the caller (root: the prolog before staging,
// `dlstage gc` from a timer, whose policies/gc rule also removes entries
// idle too long) measures the entries and the tier itself and removes what
// the plan names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "facts/config_model.hpp"
#include "facts/tier_space.hpp"
#include "policies/verdict.hpp"

namespace dlstage::policy {

struct CacheEntryFacts {
    std::string name;         // for messages: "alice/imagenet"
    std::uint64_t bytes = 0;  // what removing it gives back
    std::uint64_t inodes = 0;
    std::int64_t last_use = 0;  // seconds; from a record root keeps, never the user's own
    bool in_use = false;        // a job running on this node uses it
    bool shown = true;          // its name may be in a refusal (the job's own user's, or gc's)
    bool measured = true;       // false: not measured in time
    // Not measured in time, but its size is root's record of when it last
    // was (bytes, inodes): counted at that, and evicted first once the tier
    // is over.  Else, unmeasured, its size is unknown (bytes, inodes 0).
    bool recorded = false;

    bool size_known() const { return measured || recorded; }
};

// A tier on one node: what is used, and the limits (max_bytes and
// max_inodes resolved on the node; nothing: no limit of that kind).
struct CacheTierFacts {
    std::uint64_t used_bytes = 0;
    std::uint64_t used_inodes = 0;
    std::optional<std::uint64_t> max_bytes;
    std::optional<std::uint64_t> max_inodes;
    // The tier has its file system to itself (its root is a mount point):
    // what that says is used is the tier's.  On a file system it shares
    // (/dev/shm, a /local used for other things) it says nothing of it.
    bool own_file_system = false;
    // While an entry's size is unknown, on a file system of its own: what
    // the file system says is used beyond the entries of known size
    // (count_unmeasured), somewhere in which its bytes are.
    std::uint64_t unmeasured_bytes = 0;
    std::uint64_t unmeasured_inodes = 0;
};

// The tier's high_watermark and low_watermark (config/config).
using dlstage::Watermarks;

// What a job about to stage brings to the tier (0, 0 for gc).
struct Incoming {
    std::uint64_t bytes = 0;
    std::uint64_t inodes = 0;

    // Saturating: sizes users chose (sparse sources) never wrap to a small sum.
    Incoming& operator+=(const Incoming& more);
};

// A running job's word, in root's record of its use, of what it brings to
// an entry in all (root probed its source as that job's user): `entry` a
// key of the entry's owner and dataset, the caller's.
struct PromisedUse {
    std::string job;
    std::string entry;
    std::uint64_t bytes = 0;
    std::uint64_t inodes = 0;
};

// What an entry holds now, as measured: `staged` when its staging is done
// (its ready record is there), after which nothing more comes to it
// whatever a job said (a source made smaller after the prolog sized it must
// not keep room taken for as long as its job runs).
struct HeldEntry {
    std::uint64_t bytes = 0;
    std::uint64_t inodes = 0;
    bool staged = false;
};

// What jobs admitted before `job` still bring: per entry some other running
// job stages that is not staged yet, the most any of them brings beyond
// what the entry holds now (`held`, by the same key; absent: nothing yet).
// Their stagers write after their prologs: counted, the next prolog makes
// room for them too, and two jobs admitted a moment apart cannot take the
// tier past its watermark between them (the cache-pressure soak once
// peaked at 62 MiB of a 48 MiB tier).  Added to what `job` brings; the
// entries it brings itself (`its_own`, by the same key) are counted there
// once (jobs staging one entry at once share one transfer).
Incoming still_coming(const std::vector<PromisedUse>& promised, const std::map<std::string, HeldEntry>& held,
                      const std::string& job, const std::set<std::string>& its_own);

struct EvictionPlan {
    std::vector<std::size_t> evict;  // indexes into the entries, in eviction order
    std::vector<std::string> why;    // one line per evicted entry
    // Per evicted entry: it goes for what the file system says (an entry
    // not measured in time, on a file system of the tier's own), so whoever
    // evicts asks it again first (over_low_by_file_system).
    std::vector<bool> ask_file_system;
    // Refused when even evicting every unused entry leaves too little room
    // for what comes in (the job's request cannot be met here now); its
    // reason names the entries in use, and `evict` is then empty: no
    // entry is lost for a job that cannot run anyway.  Allowed otherwise,
    // with a summary.
    Verdict fits;
};

// The entries' sizes are what root measured in users' directories; the
// tier's file system (statvfs) has the last word: the entries cannot hold
// more than it says is used (a measurement inflated, by hard links or
// otherwise, must not make room at other users' cost).
void cap_at_file_system_use(CacheTierFacts& tier, const TierSpace& space);

// An entry not measured in time (a user's directory too slow to measure
// in the prolog's share, or one held from being measured) may hold more
// than its recorded size, or an unknown size: while there is one, on a
// file system of the tier's own, what the file system says is used beyond
// the entries of known size counts as theirs.  On a file system the tier
// shares, nothing does: the file system's use is not the tier's, and
// charging it to them would evict them at will.  Call after
// cap_at_file_system_use.
void count_unmeasured(CacheTierFacts& tier, const TierSpace& space, bool any_unmeasured);

// Nothing goes while the entries of known size (measured, or at their
// recorded size) with what comes in, plus what a file system of the tier's
// own says nobody measured, are below the high watermark.  Over it, while
// the entries of known size are: those not measured in time go first
// (their recorded size may be less than they hold now: being slow to
// measure gains nothing), then the measured ones, least recently used first
// in each, until below the low watermark.  Then, on a file system of the
// tier's own, the entries not measured in time that are left (of unknown
// size, or grown past their recorded one unseen) that no running job
// uses, least recently used first: none may hold bytes past eviction for
// being slow to measure.  Nobody can say what each of those gives back, so whoever evicts
// asks the file system again before each (over_low_by_file_system) and
// stops once it is below the low watermark.  Whether the job fits is judged
// on the entries of known size: bytes of one in use of unknown size are not
// guessed at.
EvictionPlan plan_eviction(const std::vector<CacheEntryFacts>& entries, const CacheTierFacts& tier,
                           const Watermarks& marks, const Incoming& incoming = {});

// Before evicting an entry not measured: whether the tier's file system, as
// it is now, with what comes in, is still over the low watermark of the
// tier's limits.
bool over_low_by_file_system(const CacheTierFacts& tier, const TierSpace& now, const Watermarks& marks,
                             const Incoming& incoming = {});

}  // namespace dlstage::policy
