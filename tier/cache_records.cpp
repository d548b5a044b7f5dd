#include "tier/cache_records.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
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
    for (const CacheUse& use : uses)
        list.push_back(toml::table{{"tier", use.tier},
                                   {"user", use.user},
                                   {"uid", static_cast<std::int64_t>(use.uid)},
                                   {"dataset", use.dataset}});
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

CacheLock::CacheLock(const std::string& state_dir, const std::string& node, double seconds)
{
    const std::string base = cache_state_dir(state_dir, node);
    const Fd dir = open_private_records(state_dir, node);
    fd_ = ::openat(dir.get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0)
        throw_cannot("create", base + "/lock", errno);
    // Polled rather than a blocking flock: the holder is root's own code,
    // each part of it bounded, so a wait past `seconds` means something is
    // wrong, and the caller must get on with what else it has to do.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        if ((err != EWOULDBLOCK && err != EINTR) || std::chrono::steady_clock::now() >= deadline) {
            ::close(fd_);
            if (err != EWOULDBLOCK && err != EINTR)
                throw_cannot("lock", base + "/lock", err);
            throw Error("the node cache lock " + base + "/lock is still held after " +
                        std::to_string(static_cast<long long>(seconds)) +
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

void add_root_records(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                      const std::string& node)
{
    const std::string base = cache_state_dir(state_dir, node);
    OpenResult last = open_trusted_dir(state_dir, base + "/last-use", false);
    for (NodeCacheEntry& entry : entries) {
        struct stat st {};
        if (!entry.unlisted && last.dir.valid() &&
            ::fstatat(last.dir.get(), last_use_name(tier.name, entry.uid, entry.dataset).c_str(), &st,
                      AT_SYMLINK_NOFOLLOW) == 0)
            entry.last_use = static_cast<std::int64_t>(st.st_mtim.tv_sec);
    }
    for (const auto& [job, written] : cache_use_records(state_dir, node)) {
        toml::table record;
        try {
            record = read_record(base + "/jobs/" + job + kRecordSuffix);
        } catch (const Error&) {
            continue;  // removed meanwhile
        }
        const toml::array* uses = record["uses"].as_array();
        if (!uses)
            continue;
        for (const toml::node& node_use : *uses) {
            const toml::table* use = node_use.as_table();
            if (!use || (*use)["tier"].value_or(std::string()) != tier.name)
                continue;
            const auto uid = (*use)["uid"].value<std::int64_t>();
            const std::string dataset = (*use)["dataset"].value_or(std::string());
            for (NodeCacheEntry& entry : entries) {
                if (!uid || static_cast<uid_t>(*uid) != entry.uid || entry.aside)
                    continue;
                if (entry.dataset == dataset && !entry.unlisted)
                    entry.jobs.push_back(job);
                if (entry.owner_jobs.empty() || entry.owner_jobs.back() != job)
                    entry.owner_jobs.push_back(job);
                entry.owner_datasets.insert(dataset);
            }
        }
    }
}

void refresh_cache_uses(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                        const std::string& node)
{
    for (NodeCacheEntry& entry : entries) {
        entry.jobs.clear();
        entry.owner_jobs.clear();
        entry.owner_datasets.clear();
        entry.last_use = 0;
    }
    add_root_records(entries, tier, state_dir, node);
}

}  // namespace dlstage
