#include "tier/cache_measure.hpp"

#include <algorithm>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "lib/deadline.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/cache_records.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

using namespace cache_detail;

namespace {
// The measuring child's answer: per dataset its name, bytes, inodes, files,
// whether its ready record is there (1, 0), its newest ctime (the user
// cannot set a ctime back), whether all its names are derived_names (1, 0)
// and whether it was measured whole (1) or is what was counted so far (0),
// each field ended by a NUL.
// Names are the user's (a directory called "x 999999999999 1 1\nother" is
// allowed), and NUL is the one byte no name can hold, so no name can forge
// a field or an entry.
struct Sum {
    std::uint64_t bytes = 0, inodes = 0, files = 0;
    bool ready = false;
    std::int64_t changed = 0;
    bool names_derived = true;
    bool whole = true;
};

constexpr std::size_t kSumFields = 8;

// The dataset name of a user's whole directory measured as one entry: no
// name in a directory can be "/".
constexpr const char* kWholeDirectory = "/";

std::string encode_sum(const std::string& dataset, const Sum& sum)
{
    std::string out;
    for (const std::string& field :
         {dataset, std::to_string(sum.bytes), std::to_string(sum.inodes), std::to_string(sum.files),
          std::string(sum.ready ? "1" : "0"), std::to_string(sum.changed), std::string(sum.names_derived ? "1" : "0"),
          std::string(sum.whole ? "1" : "0")})
        append_nul_ended(out, field);
    return out;
}

// The measuring child's first part: the datasets it is about to measure,
// each ended by a NUL; then one part of encode_sum per sum sent.
std::string encode_names(const std::vector<std::string>& names)
{
    std::string out;
    for (const std::string& name : names)
        append_nul_ended(out, name);
    return out;
}

// The fields of what the child sent; throws Error naming `what` (the
// listing, the measurement) on a field cut off.
std::vector<std::string> fields_sent(const std::string& text, const std::string& what)
{
    std::optional<std::vector<std::string>> fields = nul_ended_fields(text);
    if (!fields)
        throw Error(what + " ends in the middle of a field");
    return std::move(*fields);
}

// Throws Error on anything but what encode_sum writes.  A sum not whole is
// an entry not measured, known to hold at least that (`recorded`).
std::vector<NodeCacheEntry> decode_sums(const std::string& text, const NodeCacheEntry& owner)
{
    const std::vector<std::string> fields = fields_sent(text, "the measurement");
    if (fields.size() % kSumFields != 0)
        throw Error("the measurement has " + std::to_string(fields.size()) + " fields, not a multiple of " +
                    std::to_string(kSumFields));
    const auto flag = [](const std::string& field) { return field == "0" || field == "1"; };
    std::vector<NodeCacheEntry> entries;
    for (std::size_t i = 0; i < fields.size(); i += kSumFields) {
        NodeCacheEntry entry = owner;
        entry.dataset = fields[i];
        std::uint64_t changed = 0;
        if (entry.dataset.empty() || !read_count(fields[i + 1], entry.bytes) ||
            !read_count(fields[i + 2], entry.inodes) || !read_count(fields[i + 3], entry.files) ||
            !flag(fields[i + 4]) || !read_count(fields[i + 5], changed) || !flag(fields[i + 6]) || !flag(fields[i + 7]))
            throw Error("the measurement has an unreadable entry");
        entry.ready = fields[i + 4] == "1";
        entry.names_derived = fields[i + 6] == "1";
        entry.changed = static_cast<std::int64_t>(changed);
        if (fields[i + 7] == "0") {  // counted so far: its readiness and age unknown
            entry.measured = false;
            entry.recorded = true;
            entry.ready = owner.ready;
            entry.names_derived = false;
            entry.changed = owner.changed;
        }
        entries.push_back(entry);
    }
    return entries;
}

// While a dataset is measured, what was counted so far is sent every
// kPartialEvery inodes: one too large to measure within its owner's time
// then counts at least at what was seen of it, never at an older, smaller
// recorded size (a directory that grew while too slow to measure hid its
// growth until gc, with more time, measured it whole).
constexpr std::uint64_t kPartialEvery = 1024;

struct PartialSums {
    const SendPart& send;
    std::string dataset;
    std::uint64_t next_at = kPartialEvery;

    void counted(const Sum& sum)
    {
        if (sum.inodes < next_at)
            return;
        next_at = sum.inodes + kPartialEvery;
        Sum so_far = sum;
        so_far.whole = false;
        send(encode_sum(dataset, so_far));
    }
};

// Adds what one name takes to a sum.  A file with several links is counted
// once, at its first name: a thousand links to one file are not a thousand
// files' worth of room.  Past kMaxLinkedKept such files, root's memory
// stays bounded: each further link counts its share of its file (its size
// over its links), so that all of a file's links together count it once
// and no link counts it again (counted whole, they would let a user with
// more links make their entries look as large as they liked, and root
// evict others' entries for them).
constexpr std::size_t kMaxLinkedKept = 1000000;

struct Tally {
    std::set<std::pair<dev_t, ino_t>> linked;
    double inode_shares = 0;  // past the cap: parts of inodes, counted whole as they add up

    bool add(Sum& sum, const struct stat& st)
    {
        const auto bytes = static_cast<std::uint64_t>(st.st_blocks) * 512;
        sum.changed = std::max(sum.changed, static_cast<std::int64_t>(st.st_ctim.tv_sec));
        if (st.st_nlink > 1 && !S_ISDIR(st.st_mode)) {
            if (linked.size() >= kMaxLinkedKept) {
                const auto links = static_cast<std::uint64_t>(st.st_nlink);
                sum.bytes += (bytes + links - 1) / links;
                inode_shares += 1.0 / static_cast<double>(links);
                if (inode_shares >= 1) {
                    sum.inodes += 1;
                    inode_shares -= 1;
                }
                return false;  // not a file of the copy's: the links' first names are
            }
            if (!linked.insert({st.st_dev, st.st_ino}).second)
                return false;
        }
        sum.bytes += bytes;
        sum.inodes += 1;
        return true;
    }
};

// In the child, as the aside's owner: all of a directory a prolog moved
// aside (`name` in the cache parent), as one entry.  Reached as root's
// code reaches a directory it only looks into: it may be 0755 by now.
std::string measure_aside(const std::string& root, const std::string& name, const std::string& shown,
                          const SendPart& send)
{
    OpenResult opened = look_into_dir(root, shown);
    if (!opened.problem.empty() || !opened.dir.valid())
        throw Error(opened.problem.empty() ? shown + ": gone" : opened.problem);
    send(encode_names({name}));
    const Fd& dir = opened.dir;
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0)
        throw_cannot("examine", shown, errno);
    Sum sum;
    sum.ready = true;  // nothing stages into it: never "unfinished"
    Tally tally;
    tally.add(sum, st);
    PartialSums partial{send, name};
    std::mutex mutex;
    try {
        walk_tree(dir.get(), shown, 4, [&](const FoundEntry& found) {
            const std::lock_guard<std::mutex> lock(mutex);
            if (tally.add(sum, found.st) && S_ISREG(found.st.st_mode))
                sum.files += 1;
            partial.counted(sum);
        });
    } catch (const Error&) {
        // A part the owner cannot read: what was counted stays.
    }
    send(encode_sum(name, sum));
    return "";
}

// Past this many datasets, or names, in one user's directory, the whole
// directory is one entry, measured without keeping its names: root's
// memory and work stay bounded whatever a user puts there (a million
// names once took 662 MiB and a million entries).
constexpr std::size_t kMaxEntriesListed = 100000;
constexpr std::size_t kMaxNamesListed = 1000000;

// In the child, as the owner: a directory of theirs they took their own
// read or search permission from (chmod 0100, 000) is given it back, as
// the eviction's remover does, so that hiding a part hides nothing: once a
// directory the child could not open counted as nothing, and a user could
// fill the tier unseen.  Only u+rx: nothing is opened to anyone else.
void let_owner_in(int dir_fd, const char* name, const struct stat& st)
{
    constexpr mode_t kOwnerIn = S_IRUSR | S_IXUSR;
    const bool shut_out = S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & kOwnerIn) != kOwnerIn;
    if (shut_out && ::fchmodat(dir_fd, name, (st.st_mode & 07777) | kOwnerIn, 0) != 0)
        return;  // opening it fails next, and says so
}

// What one name of `dir` (open as dir_fd) holds, added to `sum`: itself
// and, a directory, everything below it (its regular files counted as the
// copy's files when `copy`), what was counted so far sent as it grows.
// Gone: the name is not there; Partial: a part could not be read even so,
// and the sum is less than it holds.
enum class Added { Gone, Whole, Partial };

Added add_name(Sum& sum, Tally& tally, PartialSums& partial, int dir_fd, const std::string& dir,
               const std::string& name, bool copy)
{
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return Added::Gone;
    const bool counted = tally.add(sum, st);
    partial.counted(sum);
    if (!counted || !S_ISDIR(st.st_mode))
        return Added::Whole;
    let_owner_in(dir_fd, name.c_str(), st);
    Fd sub(::openat(dir_fd, name.c_str(), kDirFlags));
    if (!sub.valid())
        return Added::Partial;
    std::mutex mutex;
    try {
        walk_tree(sub.get(), dir + "/" + name, 4, [&](const FoundEntry& found) {
            let_owner_in(found.dir_fd, found.name, found.st);  // before its entries are listed
            const std::lock_guard<std::mutex> lock(mutex);
            if (tally.add(sum, found.st) && copy && S_ISREG(found.st.st_mode))
                sum.files += 1;
            partial.counted(sum);
        });
    } catch (const Error&) {
        return Added::Partial;
    }
    return Added::Whole;
}

// In the child, as the user: all of `dir` as one entry (kWholeDirectory),
// but the names of a dataset in `skipped`, read as it is listed.
std::string measure_whole_dir(const Fd& at, const std::string& dir, const std::set<std::string>& skipped,
                              const SendPart& send)
{
    send(encode_names({kWholeDirectory}));
    Sum sum;
    sum.ready = true;  // never "unfinished": it is no one staging
    sum.names_derived = false;
    Tally tally;
    PartialSums partial{send, kWholeDirectory};
    const Fd reading = reopen_for_reading(at);
    DirStream stream(reading.get());
    bool whole = true;
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        const std::string name = e->d_name;
        const std::string dataset = dataset_of(name);
        if (!dataset.empty() && !skipped.count(dataset))
            whole = add_name(sum, tally, partial, at.get(), dir, name, false) != Added::Partial && whole;
    }
    sum.whole = whole;  // else, a part unreadable, at least what was counted
    send(encode_sum(kWholeDirectory, sum));
    return "";
}

// In the child, as the user: the entries of `dir`, leaving out every name
// of a dataset in `skipped` (one of its names holds a mount).  All names
// are listed first and sent as one part, then each dataset is measured
// whole and sent as it is done: when the time runs out, what was measured
// counts, and what was listed is known to be there.  Too many to list:
// the whole directory one entry (measure_whole_dir).
std::string measure_user_dir(const std::string& root, const std::string& dir, const std::set<std::string>& skipped,
                             const std::map<std::string, std::uint64_t>& measured_at, const SendPart& send)
{
    {
        // Their own directory too (its parent is root's cache parent).
        const std::size_t slash = dir.rfind('/');
        const Fd parent(::open(dir.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        struct stat st {};
        if (parent.valid() && ::fstatat(parent.get(), dir.c_str() + slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0)
            let_owner_in(parent.get(), dir.c_str() + slash + 1, st);
    }
    OpenResult opened = open_job_dir(root, dir);
    if (!opened.problem.empty())
        throw Error(opened.problem);
    std::map<std::string, std::vector<std::string>> names_of;
    {
        std::size_t listed = 0;
        const Fd reading = reopen_for_reading(opened.dir);
        DirStream stream(reading.get());
        while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
            const std::string name = e->d_name;
            const std::string dataset = dataset_of(name);
            if (dataset.empty() || skipped.count(dataset))
                continue;
            names_of[dataset].push_back(name);
            if (++listed > kMaxNamesListed || names_of.size() > kMaxEntriesListed) {
                names_of.clear();
                return measure_whole_dir(opened.dir, dir, skipped, send);
            }
        }
    }
    std::vector<std::string> datasets;
    for (const auto& [dataset, names] : names_of)
        datasets.push_back(dataset);
    send(encode_names(datasets));
    Tally tally;
    for (const std::string& dataset : measuring_order(datasets, measured_at)) {
        const std::vector<std::string>& names = names_of[dataset];
        Sum sum;
        PartialSums partial{send, dataset};
        const std::vector<std::string> derived = derived_names(dataset);
        for (const std::string& name : names) {
            if (std::find(derived.begin(), derived.end(), name) == derived.end())
                sum.names_derived = false;
            const Added added = add_name(sum, tally, partial, opened.dir.get(), dir, name, name == dataset);
            sum.whole = sum.whole && added != Added::Partial;
            if (added != Added::Gone && name == kReadyPrefix + dataset + kRecordSuffix)
                sum.ready = true;
        }
        // A part it could not read even as its owner: not measured, at
        // least what was counted (or its recorded size, if more).
        send(encode_sum(dataset, sum));
    }
    return "";
}

// How long measuring may take: each user's directory at most `each`, all
// of them together `total` seconds (said in messages), and each no more
// than its fair share of what is left: one slow directory that comes first
// in the listing cannot take every later one's time.  A share is at least
// half a second while that much is left.
struct MeasureBudget {
    double each;
    double total;
    FairShares shares;

    double next_share()
    {
        const double left = shares.left();
        const double share = shares.next();
        return std::min(each, left < 0.5 ? left : std::max(0.5, share));
    }
};

// The entries a measuring child sent before it ended: each dataset of its
// listing, measured or not; `unlisted` when no listing came.
std::vector<NodeCacheEntry> entries_sent(const std::vector<std::string>& parts, const NodeCacheEntry& owner,
                                         const NodeCacheEntry& unlisted)
{
    if (parts.empty())
        return {unlisted};
    std::map<std::string, NodeCacheEntry> by_dataset;
    for (std::size_t i = 1; i < parts.size(); ++i)
        for (NodeCacheEntry& entry : decode_sums(parts[i], owner)) {
            // What was counted so far, then more, then the whole: the last
            // sent is the most known.
            by_dataset[entry.dataset] = std::move(entry);
        }
    std::vector<NodeCacheEntry> entries;
    for (const std::string& dataset : fields_sent(parts.front(), "the listing")) {
        const auto measured = by_dataset.find(dataset);
        if (measured != by_dataset.end()) {
            entries.push_back(std::move(measured->second));
        } else {
            NodeCacheEntry entry = owner;
            entry.dataset = dataset;
            entry.measured = false;
            entries.push_back(std::move(entry));
        }
        if (dataset == kWholeDirectory) {  // too many names: all of it one entry
            entries.back().dataset.clear();
            entries.back().unlisted = true;
        }
    }
    return entries;
}

// Runs `measure` in a child acting as `owner`, bounded by what is left of
// the budget, and adds the entries it sent to `found`: what it had no time
// to measure is an entry of unknown size (`unlisted` when it listed
// nothing), and a problem.
void measure_as_owner(const NodeCacheEntry& owner, const NodeCacheEntry& unlisted, const std::string& dir,
                      MeasureBudget& budget, const std::function<std::string(const SendPart&)>& measure,
                      FoundCacheEntries& found)
{
    constexpr const char* kUnknown = "; what it did not measure counts as unknown";
    const double seconds = budget.next_share();
    if (seconds < 0.5) {
        found.problems.push_back(dir + ": not measured: the " + std::to_string(static_cast<long long>(budget.total)) +
                                 " s" + " for measuring the node cache are up; its entries are left out");
        return;
    }
    const BoundedOutcome outcome = run_bounded_parts(seconds, [&](const SendPart& send) {
        act_as(owner.uid, owner.gid);
        return measure(send);
    });
    // Only a child that had its share and could not even list the
    // directory makes it one entry of unknown size: one that failed (no
    // fork, a refused directory) says nothing of what is in it.
    if (outcome.parts.empty() && outcome.status == BoundedOutcome::Status::Failed) {
        found.problems.push_back(dir + ": " + outcome.problem + "; its entries are left out");
        return;
    }
    if (outcome.status != BoundedOutcome::Status::Done)
        found.problems.push_back(dir + ": " + outcome.problem + kUnknown);
    try {
        for (NodeCacheEntry& entry : entries_sent(outcome.parts, owner, unlisted))
            found.entries.push_back(std::move(entry));
    } catch (const Error& e) {
        found.problems.push_back(dir + ": " + e.what() + "; its entries are left out");
    }
}

// When NAME.untrusted-YYYYMMDDTHHMMSSZ-PID was moved aside (epoch
// seconds); 0 when its name does not say.
std::int64_t moved_aside_at(const std::string& name)
{
    const std::string mark = ".untrusted-";
    const std::size_t at = name.rfind(mark);
    if (at == std::string::npos || name.size() < at + mark.size() + 16)
        return 0;
    struct tm t {};
    const std::string stamp = name.substr(at + mark.size(), 16);
    if (!::strptime(stamp.c_str(), "%Y%m%dT%H%M%SZ", &t))
        return 0;
    return static_cast<std::int64_t>(::timegm(&t));
}

// A directory a prolog moved aside in the cache parent (a user's cache
// directory with a mount on it, one of another uid): still the owner's
// bytes in the tier, so one entry, measured as its owner, that no job uses.
// No job can use it either: a mount in it (a user's, on it or carried
// along by the rename) is detached first, from mountinfo, never entered;
// then whose it is comes from the kernel's cached attributes of the name in
// root's directory (a FUSE server is not asked).  Root only.
void measure_aside_entry(const Tier& tier, const CacheUsers& users, const MountTable& mounts, const std::string& name,
                         MeasureBudget& budget, FoundCacheEntries& found)
{
    const std::string dir = cache_parent_of(tier) + "/" + name;
    const MountsInCache mounted = mounts_in(mounts, users.real_parent + "/" + name, dir);
    if (mounted.whole || !mounted.datasets.empty()) {
        const DetachResult detached = detach_mounts_within(tier.path.root(), dir);
        if (!detached.problems.empty()) {
            found.problems.push_back(shown_path(dir) + ": moved aside, holds a mount: " + detached.problems.front() +
                                     "; neither measured nor evicted");
            return;
        }
    }
    QuickStat st;
    if (!quick_stat(users.parent.get(), name.c_str(), AT_SYMLINK_NOFOLLOW, st)) {
        if (errno != ENOENT)  // else gone meanwhile
            found.problems.push_back(cannot("examine", shown_path(dir), errno) + "; neither measured nor evicted");
        return;
    }
    if (!S_ISDIR(st.mode) || st.uid == 0) {
        found.problems.push_back(shown_path(dir) + ": moved aside, but " +
                                 (S_ISDIR(st.mode) ? "root's" : "not a directory") +
                                 "; neither measured nor evicted, left for the admin");
        return;
    }
    NodeCacheEntry owner;
    owner.uid = st.uid;
    const struct passwd* pw = ::getpwuid(st.uid);
    // The owner's own group when they have one: the directory's may be any
    // group they chose.
    owner.gid = pw ? pw->pw_gid : st.gid;
    owner.user = pw ? pw->pw_name : "uid " + std::to_string(st.uid);
    owner.aside = true;
    NodeCacheEntry unmeasured = owner;
    unmeasured.dataset = name;
    unmeasured.measured = false;
    const std::size_t before = found.entries.size();
    measure_as_owner(
        owner, unmeasured, dir, budget,
        [&](const SendPart& send) { return measure_aside(tier.path.root(), name, dir, send); }, found);
    // Its age is how long ago it was moved, which root wrote in its name:
    // not the newest ctime in it, which its owner could keep fresh.
    for (std::size_t i = before; i < found.entries.size(); ++i)
        found.entries[i].changed = moved_aside_at(name);
}

// One user's cache directory measured as its owner within their budget.
void measure_user_entries(const Tier& tier, const CacheUsers& users, const MountTable& mounts, const std::string& user,
                          const std::string& state_dir, const std::string& node, MeasureBudget& budget,
                          FoundCacheEntries& found)
{
    const struct passwd* pw = ::getpwnam(user.c_str());
    if (!pw) {
        found.problems.push_back(cache_dir_of(tier, user) + ": no such user");
        return;
    }
    const NodeCacheEntry owner = entry_owned_by(user, pw->pw_uid, pw->pw_gid);
    if (::geteuid() != 0 && ::geteuid() != owner.uid)
        return;  // another user's: theirs to see
    const std::string dir = cache_dir_of(tier, user);
    const MountsInCache mounted = mounts_in(mounts, users.real_parent + "/" + user, dir);
    if (mounted.whole) {
        found.problems.push_back(*mounted.whole);
        return;
    }
    for (const auto& [dataset, why] : mounted.datasets)
        found.problems.push_back(why);
    const std::set<std::string> skipped = mounted.names();
    NodeCacheEntry unlisted = owner;
    unlisted.measured = false;
    unlisted.unlisted = true;
    const auto measured_at = recorded_measurements(tier, state_dir, node, owner.uid);  // read as root, before
    measure_as_owner(
        owner, unlisted, dir, budget,
        [&](const SendPart& send) { return measure_user_dir(tier.path.root(), dir, skipped, measured_at, send); },
        found);
}

}  // namespace

FoundCacheEntries find_cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node,
                                     double each_seconds, double total_seconds)
{
    const Deadline measuring(total_seconds);  // from the start: listing users and mounts count too
    FoundCacheEntries found;
    const CacheUsers users = cache_users(tier, found.problems);
    if (users.names.empty() && users.asides.empty())
        return found;
    MountTable mounts;
    try {
        mounts = MountTable::current();
    } catch (const Error& e) {
        found.problems.push_back(std::string(e.what()) + ": no entry measured (a mount in one could hang it)");
        return found;
    }
    const std::vector<MeasuringSlot> slots = measuring_slots(users.names, users.asides);
    MeasureBudget budget{each_seconds, total_seconds,
                         FairShares(measuring.left(), ::geteuid() == 0 ? slots.size() : std::size_t{1})};
    for (const MeasuringSlot& slot : slots) {
        if (::geteuid() != 0 && !slot.has_directory)
            continue;  // asides are root's to look at
        // This owner's share, for their directory and their asides: what
        // they put there costs their own measuring time, nobody else's.
        const double seconds = budget.next_share();
        MeasureBudget own{seconds, budget.total,
                          FairShares(seconds, (slot.has_directory ? 1u : 0u) + slot.asides.size())};
        if (slot.has_directory)
            measure_user_entries(tier, users, mounts, slot.owner, state_dir, node, own, found);
        if (::geteuid() == 0)  // asides are root's to look at (and detach mounts in)
            for (const std::string& name : slot.asides)
                measure_aside_entry(tier, users, mounts, name, own, found);
    }
    add_root_records(found.entries, tier, state_dir, node);
    settle_recorded_sizes(found.entries, tier, state_dir, node);
    return found;
}

}  // namespace dlstage
