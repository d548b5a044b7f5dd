// Root's records of a node cache (state_dir/cache/<node>/, 0700; files
// 0600): which jobs use which entry (jobs/<job>.toml, written by the
// prolog, removed by the epilog), when each entry was last used
// (last-use/<tier>.<uid>.<dataset>, whose mtime the prolog sets), how many
// evictions there have been (evictions), and the node's cache lock (lock)
// that serializes recording a use with evicting.  Nothing here is a
// user's: root reads only its own files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "config/config.hpp"
#include "tier/cache_entry.hpp"

namespace dlstage {

// One use of an entry by a job: the entry is (tier, uid, dataset).
struct CacheUse {
    std::string tier;
    std::string user;
    uid_t uid = 0;
    std::string dataset;
    // What the job brings to the entry in all, as root probed its source as
    // the job's user (tier/cache_entry probe_source_as); unset: not known.
    std::optional<std::uint64_t> bytes, inodes;
};

// The prolog: `job` uses these entries on `node` from now on, and their
// last use is now.  Serialized with other prologs on the node (a lock in
// state_dir/cache/<node>), as eviction is: take CacheLock around both.
void record_cache_use(const std::string& state_dir, const std::string& node, const std::string& job,
                      const std::vector<CacheUse>& uses);
// The epilog (and gc, for a job that ended without one): `job` uses none.
void forget_cache_use(const std::string& state_dir, const std::string& node, const std::string& job);
// The jobs with use records on node, in job id order as text, each with
// when its record was written (root's own file's mtime).
struct CacheUseRecord {
    std::string job;
    std::int64_t written = 0;
};
std::vector<CacheUseRecord> cache_use_records(const std::string& state_dir, const std::string& node);

// What jobs on `node` said, in their uses of `tier`'s entries, that they
// bring (CacheUse bytes and inodes, where known), each job's use once: for the prolog to
// count what jobs admitted before it still bring (policies/cache_eviction
// still_coming).  Root's records: nothing a user wrote.
struct CachePromise {
    std::string job;
    std::int64_t written = 0;  // when its use was recorded (epoch seconds)
    uid_t uid = 0;
    std::string dataset;
    std::uint64_t bytes = 0, inodes = 0;
};
std::vector<CachePromise> cache_promises(const Tier& tier, const std::string& state_dir, const std::string& node);

// Held while a prolog records its use, and while a prolog, an epilog or
// gc reads the uses and evicts, so that no entry a job has recorded its use
// of is evicted.  Measuring goes without it (eviction_generation below).
// Waits at most `seconds` for another holder, then throws Error saying the
// lock is still held (every holder is root's own bounded work: a longer
// wait means something is wrong, and the caller has more to do).
// The lock of the entries (the default), or another of root's on the
// node's cache records (tier/cache_features: kFeaturesLock).
inline constexpr const char* kEntriesLock = "lock";
inline constexpr const char* kFeaturesLock = "features.lock";
class CacheLock {
public:
    CacheLock(const std::string& state_dir, const std::string& node, double seconds,
              const char* file = kEntriesLock);  // throws Error
    ~CacheLock();
    CacheLock(const CacheLock&) = delete;
    CacheLock& operator=(const CacheLock&) = delete;

private:
    int fd_ = -1;
};

// dlstage's node features as root last set them for the node
// (state_dir/cache/<node>/features, one a line): a part that would only
// add what is there, or remove what is not, need not ask slurmctld.  Root
// only; none when never set.
inline constexpr const char* kFeaturesRecord = "features";
std::set<std::string> recorded_node_features(const std::string& state_dir, const std::string& node);
void record_node_features(const std::string& state_dir, const std::string& node, const std::set<std::string>& features);

// Which evictions happened on the node: a number that grows with each
// (root's state_dir/cache/<node>/evictions).  Entries are measured without
// the node's cache lock; whoever then evicts compares the number taken
// before measuring with the number under the lock: another's evictions
// since mean the measurement no longer holds.
std::uint64_t eviction_generation(const std::string& state_dir, const std::string& node);
// After an eviction, under the lock.
void count_eviction(const std::string& state_dir, const std::string& node);

// The jobs using each entry, its owner's, and its last use, from root's
// records, each read once (the work grows with the records and the entries,
// never their product): after find_cache_entries measured them, and again
// under the node's cache lock before evicting (they were measured without
// it).  Every field it sets is set anew.
void add_root_records(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                      const std::string& node);

// Root's record of each entry's size when last measured
// (sizes/<tier>.<uid>, one file per owner: per entry its dataset, bytes,
// inodes and files, each ended by a NUL, as no name can hold one), after
// find_cache_entries measured: an entry its turn did not come for counts
// at its recorded size (`recorded`), and a directory not even listed at
// the sum of its owner's; the record is then rewritten from what was
// measured (a dataset no longer listed forgotten).  Root only; asides and
// entries never measured keep an unknown size.
void settle_recorded_sizes(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                           const std::string& node);

// When each of `uid`'s entries in `tier` was last measured whole, by
// dataset (epoch seconds), from that record: the measuring child takes
// those never measured first, then those measured longest ago, so that one
// kept slow to measure cannot keep the ones after it from ever being
// measured.  Root only (nothing otherwise).
std::map<std::string, std::uint64_t> recorded_measurements(const Tier& tier, const std::string& state_dir,
                                                           const std::string& node, uid_t uid);

}  // namespace dlstage
