#include "tier/cache_records.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

namespace {
std::string cache_state_dir(const std::string& state_dir, const std::string& node)
{
    return state_dir + "/cache/" + node;
}

Fd open_state_subdir(const std::string& state_dir, const std::string& dir, bool create)
{
    OpenResult opened = open_trusted_dir(state_dir, dir, create);
    if (!opened.problem.empty())
        throw Error("node cache records: " + opened.problem);
    return std::move(opened.dir);
}

// A directory of root's records of a node's cache (created if missing),
// 0700 whatever an earlier release left: the records name users' datasets,
// which come from their private paths, and which jobs use them.
Fd open_private_records(const std::string& state_dir, const std::string& node, const std::string& sub = "")
{
    const auto make_private = [&state_dir](const std::string& dir) {
        Fd opened = open_state_subdir(state_dir, dir, true);
        const Fd reading = reopen_for_reading(opened);  // O_PATH: no fchmod through it
        if (!reading.valid() || ::fchmod(reading.get(), 0700) != 0)
            throw_cannot("make private", dir, errno);
        return opened;
    };
    const std::string base = cache_state_dir(state_dir, node);
    Fd opened = make_private(base);
    if (sub.empty())
        return opened;
    return make_private(base + sub);
}

std::string last_use_name(const std::string& tier, uid_t uid, const std::string& dataset)
{
    return tier + "." + std::to_string(uid) + "." + dataset;
}
}  // namespace

void record_cache_use(const std::string& state_dir, const std::string& node, const std::string& job,
                      const std::vector<CacheUse>& uses)
{
    const std::string base = cache_state_dir(state_dir, node);
    toml::array list;
    for (const CacheUse& use : uses) {
        toml::table entry{{"tier", use.tier},
                          {"user", use.user},
                          {"uid", static_cast<std::int64_t>(use.uid)},
                          {"dataset", use.dataset}};
        // TOML's integers are signed: a size past that (a sparse file's
        // apparent size) is recorded as the most there is.
        const auto recorded = [](std::uint64_t n) {
            return static_cast<std::int64_t>(std::min<std::uint64_t>(n, INT64_MAX));
        };
        if (use.bytes)
            entry.insert("bytes", recorded(*use.bytes));
        if (use.inodes)
            entry.insert("inodes", recorded(*use.inodes));
        list.push_back(std::move(entry));
    }
    const Fd jobs = open_private_records(state_dir, node, "/jobs");
    write_record_at(jobs.get(), base + "/jobs", job + kRecordSuffix, toml::table{{"job", job}, {"uses", list}}, 0600);
    const Fd last = open_private_records(state_dir, node, "/last-use");
    for (const CacheUse& use : uses) {
        const std::string name = last_use_name(use.tier, use.uid, use.dataset);
        Fd marker(::openat(last.get(), name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!marker.valid() || ::fchmod(marker.get(), 0600) != 0 || ::futimens(marker.get(), nullptr) != 0)
            throw_cannot("record the use of", base + "/last-use/" + name, errno);
    }
}

void forget_cache_use(const std::string& state_dir, const std::string& node, const std::string& job)
{
    const std::string base = cache_state_dir(state_dir, node);
    OpenResult jobs = open_trusted_dir(state_dir, base + "/jobs", false);
    if (!jobs.dir.valid())
        return;  // no job ever used a cache here
    const std::string name = job + kRecordSuffix;
    if (::unlinkat(jobs.dir.get(), name.c_str(), 0) != 0 && errno != ENOENT)
        throw_cannot("remove", base + "/jobs/" + name, errno);
}

std::vector<CacheUseRecord> cache_use_records(const std::string& state_dir, const std::string& node)
{
    std::vector<CacheUseRecord> records;
    OpenResult jobs = open_trusted_dir(state_dir, cache_state_dir(state_dir, node) + "/jobs", false);
    if (!jobs.dir.valid())
        return records;
    const Fd reading = reopen_for_reading(jobs.dir);
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        const std::string name = e->d_name;
        struct stat st {};
        if (!ends_with(name, kRecordSuffix) || ::fstatat(reading.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;  // removed meanwhile
        records.push_back({name.substr(0, name.size() - std::string(kRecordSuffix).size()),
                           static_cast<std::int64_t>(st.st_mtim.tv_sec)});
    }
    std::sort(records.begin(), records.end(),
              [](const CacheUseRecord& a, const CacheUseRecord& b) { return a.job < b.job; });
    return records;
}

std::uint64_t eviction_generation(const std::string& state_dir, const std::string& node)
{
    OpenResult base = open_trusted_dir(state_dir, cache_state_dir(state_dir, node), false);
    struct stat st {};
    if (!base.dir.valid() || ::fstatat(base.dir.get(), "evictions", &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    return static_cast<std::uint64_t>(st.st_size);
}

void count_eviction(const std::string& state_dir, const std::string& node)
{
    const std::string base = cache_state_dir(state_dir, node);
    const Fd dir = open_private_records(state_dir, node);
    // One byte each: the size only grows, where an mtime could repeat
    // within the clock's tick.
    Fd marker(::openat(dir.get(), "evictions", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!marker.valid() || ::write(marker.get(), "e", 1) != 1)
        throw_cannot("count an eviction in", base + "/evictions", errno);
}

CacheLock::CacheLock(const std::string& state_dir, const std::string& node, double seconds, const char* file)
{
    const std::string base = cache_state_dir(state_dir, node);
    const Fd dir = open_private_records(state_dir, node);
    fd_ = ::openat(dir.get(), file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0)
        throw_cannot("create", base + "/" + file, errno);
    // Polled rather than a blocking flock: the holder is root's own code,
    // each part of it bounded, so a wait past `seconds` means something is
    // wrong, and the caller must get on with what else it has to do.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        if ((err != EWOULDBLOCK && err != EINTR) || std::chrono::steady_clock::now() >= deadline) {
            ::close(fd_);
            if (err != EWOULDBLOCK && err != EINTR)
                throw_cannot("lock", base + "/" + file, err);
            throw Error(std::string(std::string_view(file) == kEntriesLock ? "the node cache lock " : "the lock ") +
                        base + "/" + file + " is still held after " + std::to_string(static_cast<long long>(seconds)) +
                        " s (a prolog, an epilog or another gc on this node)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

CacheLock::~CacheLock()
{
    if (fd_ >= 0)
        ::close(fd_);  // releases the lock
}

std::set<std::string> recorded_node_features(const std::string& state_dir, const std::string& node)
{
    std::set<std::string> features;
    OpenResult base = open_trusted_dir(state_dir, cache_state_dir(state_dir, node), false);
    if (!base.dir.valid())
        return features;
    const Fd file(::openat(base.dir.get(), kFeaturesRecord, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!file.valid())
        return features;
    const std::string shown = cache_state_dir(state_dir, node) + "/" + kFeaturesRecord;
    for (const std::string& line : split(read_all(file.get(), 1 << 20, shown), '\n'))
        if (!line.empty())
            features.insert(line);
    return features;
}

void record_node_features(const std::string& state_dir, const std::string& node, const std::set<std::string>& features)
{
    std::string text;
    for (const std::string& feature : features)
        text += feature + "\n";
    const Fd dir = open_private_records(state_dir, node);
    replace_file_at(dir.get(), cache_state_dir(state_dir, node) + "/" + kFeaturesRecord, kFeaturesRecord, text, 0600);
}

namespace {
// Root's records of one tier's uses on a node, each read once: the jobs
// using each entry (by owner and dataset), each owner's jobs and datasets,
// and when each entry was last used (by its last-use name).  Reading them
// costs the records' number, never the entries' (a user's names).
struct TierUses {
    std::map<std::pair<uid_t, std::string>, std::vector<std::string>> jobs;
    std::map<uid_t, std::shared_ptr<OwnerUses>> owners;
    std::map<std::string, std::int64_t> last_use;
    std::vector<CachePromise> promises;
};

std::map<std::string, std::int64_t> last_uses(const std::string& state_dir, const std::string& node,
                                              const std::string& tier)
{
    std::map<std::string, std::int64_t> found;
    OpenResult last = open_trusted_dir(state_dir, cache_state_dir(state_dir, node) + "/last-use", false);
    if (!last.dir.valid())
        return found;
    const Fd reading = reopen_for_reading(last.dir);
    DirStream stream(reading.get());
    const std::string mine = tier + ".";
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        struct stat st {};
        if (starts_with(e->d_name, mine) && ::fstatat(reading.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            found[e->d_name] = static_cast<std::int64_t>(st.st_mtim.tv_sec);
    }
    return found;
}

// The job records' part of TierUses (last_use left empty: a listing of
// every entry's last use, which what is still coming does not need).
TierUses read_tier_uses(const Tier& tier, const std::string& state_dir, const std::string& node)
{
    TierUses uses;
    const std::string base = cache_state_dir(state_dir, node);
    for (const auto& [job, written] : cache_use_records(state_dir, node)) {
        toml::table record;
        try {
            record = read_record(base + "/jobs/" + job + kRecordSuffix);
        } catch (const Error&) {
            continue;  // removed meanwhile
        }
        const toml::array* list = record["uses"].as_array();
        if (!list)
            continue;
        for (const toml::node& node_use : *list) {
            const toml::table* use = node_use.as_table();
            const auto uid = use ? (*use)["uid"].value<std::int64_t>() : std::nullopt;
            if (!use || !uid || (*use)["tier"].value_or(std::string()) != tier.name)
                continue;
            const auto owner = static_cast<uid_t>(*uid);
            const std::string dataset = (*use)["dataset"].value_or(std::string());
            std::vector<std::string>& of_entry = uses.jobs[{owner, dataset}];
            if (of_entry.empty() || of_entry.back() != job) {
                of_entry.push_back(job);
                const auto count = [&](const char* key) {
                    const auto n = (*use)[key].value<std::int64_t>();
                    return n && *n > 0 ? static_cast<std::uint64_t>(*n) : std::uint64_t{0};
                };
                if (count("bytes") > 0 || count("inodes") > 0)
                    uses.promises.push_back({job, written, owner, dataset, count("bytes"), count("inodes")});
            }
            std::shared_ptr<OwnerUses>& of_owner = uses.owners[owner];
            if (!of_owner)
                of_owner = std::make_shared<OwnerUses>();
            if (of_owner->jobs.empty() || of_owner->jobs.back() != job)
                of_owner->jobs.push_back(job);
            of_owner->datasets.insert(dataset);
        }
    }
    return uses;
}
}  // namespace

void add_root_records(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                      const std::string& node)
{
    TierUses uses = read_tier_uses(tier, state_dir, node);
    uses.last_use = last_uses(state_dir, node, tier.name);
    for (NodeCacheEntry& entry : entries) {
        entry.jobs.clear();
        entry.owner_uses.reset();
        entry.last_use = 0;
        if (entry.aside)
            continue;  // no job uses one
        if (!entry.unlisted) {
            const auto last = uses.last_use.find(last_use_name(tier.name, entry.uid, entry.dataset));
            if (last != uses.last_use.end())
                entry.last_use = last->second;
            const auto jobs = uses.jobs.find({entry.uid, entry.dataset});
            if (jobs != uses.jobs.end())
                entry.jobs = jobs->second;
        }
        if (const auto owner = uses.owners.find(entry.uid); owner != uses.owners.end())
            entry.owner_uses = owner->second;
    }
}

std::vector<CachePromise> cache_promises(const Tier& tier, const std::string& state_dir, const std::string& node)
{
    return read_tier_uses(tier, state_dir, node).promises;
}

namespace {
// Entries' sizes by dataset, as sizes/<tier>.<uid> holds them.
struct RecordedSize {
    std::uint64_t bytes = 0, inodes = 0, files = 0;
    std::uint64_t measured_at = 0;  // epoch seconds
};
using RecordedSizes = std::map<std::string, RecordedSize>;

constexpr std::size_t kSizeFields = 5;
constexpr std::size_t kMaxSizesRecord = 256u << 20;  // root's own file; a million entries fit

std::string sizes_name(const std::string& tier, uid_t uid)
{
    return tier + "." + std::to_string(uid);
}

// What was recorded; nothing when there is no record, or one that does
// not read as root writes it (then it is written anew).
RecordedSizes read_sizes(int dir, const std::string& shown, const std::string& name)
{
    RecordedSizes sizes;
    std::optional<SmallFile> file;
    try {
        file = read_small_file_at(dir, name, shown + "/" + name, kMaxSizesRecord, 0);
    } catch (const Error&) {
        return sizes;
    }
    const std::optional<std::vector<std::string>> fields = file ? nul_ended_fields(file->content) : std::nullopt;
    if (!fields || fields->size() % kSizeFields != 0)
        return sizes;
    for (std::size_t i = 0; i < fields->size(); i += kSizeFields) {
        RecordedSize size;
        if (!read_count((*fields)[i + 1], size.bytes) || !read_count((*fields)[i + 2], size.inodes) ||
            !read_count((*fields)[i + 3], size.files) || !read_count((*fields)[i + 4], size.measured_at))
            return {};
        sizes[(*fields)[i]] = size;
    }
    return sizes;
}

std::string encode_sizes(const RecordedSizes& sizes)
{
    std::string out;
    for (const auto& [dataset, size] : sizes)
        for (const std::string& field : {dataset, std::to_string(size.bytes), std::to_string(size.inodes),
                                         std::to_string(size.files), std::to_string(size.measured_at)})
            append_nul_ended(out, field);
    return out;
}

// An entry not measured whole counted at the more of what was counted of
// it before its time ran out and its recorded size: growing while too slow
// to measure hides nothing, and a count cut short shrinks nothing.
void count_at_least(NodeCacheEntry& entry, const RecordedSize& known)
{
    entry.bytes = std::max(entry.bytes, known.bytes);
    entry.inodes = std::max(entry.inodes, known.inodes);
    entry.files = std::max(entry.files, known.files);
    entry.recorded = true;
}

// One owner's entries (`of`, indexes into entries) given their recorded
// sizes where not measured, and their record rewritten when their
// directory was listed.
void settle_owner(std::vector<NodeCacheEntry>& entries, const std::vector<std::size_t>& of, int dir,
                  const std::string& shown, const std::string& name)
{
    for (const std::size_t i : of)
        if (entries[i].unlisted && entries[i].measured) {
            // Too many names to list: measured whole, and what was recorded
            // of its datasets no longer holds.
            ::unlinkat(dir, name.c_str(), 0);
            return;
        }
    const RecordedSizes old = read_sizes(dir, shown, name);
    RecordedSizes now;
    bool listed = false, any_unmeasured = false;
    for (const std::size_t i : of) {
        NodeCacheEntry& entry = entries[i];
        if (entry.unlisted) {
            RecordedSize all;
            for (const auto& [dataset, size] : old) {
                all.bytes += size.bytes;
                all.inodes += size.inodes;
                all.files += size.files;
            }
            if (!old.empty())
                count_at_least(entry, all);
            continue;
        }
        listed = true;
        const auto known = old.find(entry.dataset);
        if (!entry.measured && known != old.end())
            count_at_least(entry, known->second);
        // When it was last measured whole: an entry counted in part keeps
        // its turn, first (0) when it never was.
        const std::uint64_t last_whole = entry.measured       ? static_cast<std::uint64_t>(std::time(nullptr))
                                         : known != old.end() ? known->second.measured_at
                                                              : 0;
        if (entry.measured || entry.recorded)
            now[entry.dataset] = {entry.bytes, entry.inodes, entry.files, last_whole};
        any_unmeasured = any_unmeasured || !entry.measured;
    }
    // Rewritten (and synced) only when a size changed, or when an entry's
    // turn did not come (when each was measured orders the next
    // measurement): every prolog measures.
    const auto sizes_only = [](RecordedSizes sizes) {
        for (auto& [dataset, size] : sizes)
            size.measured_at = 0;
        return encode_sizes(sizes);
    };
    if (listed && now.empty() && !old.empty())
        ::unlinkat(dir, name.c_str(), 0);
    else if (listed && !now.empty() && (any_unmeasured || sizes_only(now) != sizes_only(old)))
        replace_file_at(dir, shown, name, encode_sizes(now), 0600);
}

}  // namespace

std::map<std::string, std::uint64_t> recorded_measurements(const Tier& tier, const std::string& state_dir,
                                                           const std::string& node, uid_t uid)
{
    std::map<std::string, std::uint64_t> when;
    if (::geteuid() != 0)
        return when;
    const std::string shown = cache_state_dir(state_dir, node) + "/sizes";
    OpenResult opened = open_trusted_dir(state_dir, shown, false);
    if (!opened.dir.valid())
        return when;
    for (const auto& [dataset, size] : read_sizes(opened.dir.get(), shown, sizes_name(tier.name, uid)))
        when[dataset] = size.measured_at;
    return when;
}

void settle_recorded_sizes(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                           const std::string& node)
{
    if (::geteuid() != 0)
        return;  // root's records
    std::map<uid_t, std::vector<std::size_t>> by_owner;
    for (std::size_t i = 0; i < entries.size(); ++i)
        if (!entries[i].aside)
            by_owner[entries[i].uid].push_back(i);
    if (by_owner.empty())
        return;
    const std::string shown = cache_state_dir(state_dir, node) + "/sizes";
    const Fd dir = open_private_records(state_dir, node, "/sizes");
    for (const auto& [uid, of] : by_owner)
        settle_owner(entries, of, dir.get(), shown, sizes_name(tier.name, uid));
}

}  // namespace dlstage
