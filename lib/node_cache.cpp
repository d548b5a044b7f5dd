#include "lib/node_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <grp.h>
#include <map>
#include <mutex>
#include <pwd.h>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/job_layout.hpp"
#include "lib/record_field.hpp"
#include "lib/safe_fs.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"

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
    const Fd jobs = open_state_subdir(state_dir, base + "/jobs", true);
    write_record_at(jobs.get(), base + "/jobs", job + kRecordSuffix, toml::table{{"job", job}, {"uses", list}},
                    0644);
    const Fd last = open_state_subdir(state_dir, base + "/last-use", true);
    for (const CacheUse& use : uses) {
        const std::string name = last_use_name(use.tier, use.uid, use.dataset);
        Fd marker(::openat(last.get(), name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
        if (!marker.valid() || ::futimens(marker.get(), nullptr) != 0)
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

std::vector<std::string> cache_use_jobs(const std::string& state_dir, const std::string& node)
{
    std::vector<std::string> ids;
    OpenResult jobs = open_trusted_dir(state_dir, cache_state_dir(state_dir, node) + "/jobs", false);
    if (!jobs.dir.valid())
        return ids;
    const Fd reading = reopen_for_reading(jobs.dir);
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        const std::string name = e->d_name;
        if (ends_with(name, kRecordSuffix))
            ids.push_back(name.substr(0, name.size() - std::string(kRecordSuffix).size()));
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

CacheLock::CacheLock(const std::string& state_dir, const std::string& node)
{
    const std::string base = cache_state_dir(state_dir, node);
    const Fd dir = open_state_subdir(state_dir, base, true);
    fd_ = ::openat(dir.get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0)
        throw_cannot("create", base + "/lock", errno);
    if (::flock(fd_, LOCK_EX) != 0) {
        const int err = errno;
        ::close(fd_);
        throw_cannot("lock", base + "/lock", err);
    }
}

CacheLock::~CacheLock()
{
    if (fd_ >= 0)
        ::close(fd_);  // releases the lock
}

std::string entry_name(const NodeCacheEntry& entry)
{
    return entry.user + "/" + entry.dataset;
}

namespace {
// In a child about to act for `uid`: that user, for good (it exits after).
void become(uid_t uid, gid_t gid)
{
    if (::geteuid() == uid)
        return;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
        throw_cannot("become uid " + std::to_string(uid) + " for", "the node cache", errno);
}

// The dataset an entry's name belongs to: "imagenet" for imagenet/,
// .ready-imagenet.toml, .contents-imagenet, .partial-imagenet, ...
std::string dataset_of(const std::string& name)
{
    if (name.empty() || name[0] != '.')
        return name;
    for (const char* prefix : {kReadyPrefix, kContentsPrefix, kPartialPrefix, kIncomingPrefix, kLockPrefix}) {
        if (starts_with(name, prefix)) {
            std::string rest = name.substr(std::string(prefix).size());
            if (prefix == std::string(kReadyPrefix) && ends_with(rest, kRecordSuffix))
                rest.resize(rest.size() - std::string(kRecordSuffix).size());
            return rest;
        }
    }
    if (starts_with(name, kRetiredPrefix)) {  // .retired-NAME-JOB
        const std::string rest = name.substr(std::string(kRetiredPrefix).size());
        return rest.substr(0, rest.rfind('-'));
    }
    return "";
}

// In the child, as the user: "dataset bytes inodes files" lines.
std::string measure_user_dir(const std::string& root, const std::string& dir)
{
    OpenResult opened = open_job_dir(root, dir);
    if (!opened.problem.empty())
        throw Error(opened.problem);
    struct Sum {
        std::uint64_t bytes = 0, inodes = 0, files = 0;
    };
    std::map<std::string, Sum> sums;
    const Fd reading = reopen_for_reading(opened.dir);
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        const std::string name = e->d_name;
        const std::string dataset = dataset_of(name);
        if (dataset.empty())
            continue;
        struct stat st {};
        if (::fstatat(opened.dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        Sum& sum = sums[dataset];
        sum.bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
        sum.inodes += 1;
        if (!S_ISDIR(st.st_mode))
            continue;
        Fd sub(::openat(opened.dir.get(), name.c_str(), kDirFlags));
        if (!sub.valid())
            continue;
        std::mutex mutex;
        const bool copy = name == dataset;
        walk_tree(sub.get(), dir + "/" + name, 4, [&](const FoundEntry& found) {
            const std::lock_guard<std::mutex> lock(mutex);
            sum.bytes += static_cast<std::uint64_t>(found.st.st_blocks) * 512;
            sum.inodes += 1;
            if (copy && S_ISREG(found.st.st_mode))
                sum.files += 1;
        });
    }
    std::ostringstream out;
    for (const auto& [dataset, sum] : sums)
        out << dataset << ' ' << sum.bytes << ' ' << sum.inodes << ' ' << sum.files << '\n';
    return out.str();
}

// The users with a directory below <root>/.cache: names only, read as
// root from the root-owned level (nothing in a user's directory is looked at).
std::vector<std::string> cache_users(const Tier& tier, std::vector<std::string>& problems)
{
    std::vector<std::string> users;
    OpenResult parent = look_into_tier_root(tier.path.root());
    if (!parent.dir.valid())
        return users;  // no tier root yet
    OpenResult opened = open_trusted_dir(tier.path.root(), cache_parent_of(tier), false);
    if (!opened.problem.empty()) {
        problems.push_back(opened.problem);
        return users;
    }
    if (!opened.dir.valid())
        return users;
    const Fd reading = reopen_for_reading(opened.dir);  // open_trusted_dir's is a passage (O_PATH)
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr)
        users.push_back(e->d_name);
    std::sort(users.begin(), users.end());
    return users;
}

void add_root_records(std::vector<NodeCacheEntry>& entries, const Tier& tier, const std::string& state_dir,
                      const std::string& node)
{
    const std::string base = cache_state_dir(state_dir, node);
    OpenResult last = open_trusted_dir(state_dir, base + "/last-use", false);
    for (NodeCacheEntry& entry : entries) {
        struct stat st {};
        if (last.dir.valid() &&
            ::fstatat(last.dir.get(), last_use_name(tier.name, entry.uid, entry.dataset).c_str(), &st,
                      AT_SYMLINK_NOFOLLOW) == 0)
            entry.last_use = static_cast<std::int64_t>(st.st_mtim.tv_sec);
    }
    for (const std::string& job : cache_use_jobs(state_dir, node)) {
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
            for (NodeCacheEntry& entry : entries)
                if (uid && static_cast<uid_t>(*uid) == entry.uid && entry.dataset == dataset)
                    entry.jobs.push_back(job);
        }
    }
}
}  // namespace

FoundCacheEntries find_cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node,
                                     double seconds)
{
    FoundCacheEntries found;
    for (const std::string& user : cache_users(tier, found.problems)) {
        const struct passwd* pw = ::getpwnam(user.c_str());
        if (!pw) {
            found.problems.push_back(cache_dir_of(tier, user) + ": no such user");
            continue;
        }
        const uid_t uid = pw->pw_uid;
        const gid_t gid = pw->pw_gid;
        if (::geteuid() != 0 && ::geteuid() != uid)
            continue;  // another user's: theirs to see
        const std::string dir = cache_dir_of(tier, user);
        const BoundedOutcome outcome = run_bounded(seconds, [&] {
            become(uid, gid);
            return measure_user_dir(tier.path.root(), dir);
        });
        if (outcome.status != BoundedOutcome::Status::Done) {
            found.problems.push_back(dir + ": " + outcome.problem);
            continue;
        }
        std::istringstream lines(outcome.output);
        NodeCacheEntry entry;
        entry.user = user;
        entry.uid = uid;
        entry.gid = gid;
        while (lines >> entry.dataset >> entry.bytes >> entry.inodes >> entry.files)
            found.entries.push_back(entry);
    }
    add_root_records(found.entries, tier, state_dir, node);
    return found;
}

std::string evict_cache_entry(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    const std::string dir = cache_dir_of(tier, entry.user);
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        become(entry.uid, entry.gid);
        OpenResult opened = open_job_dir(tier.path.root(), dir);
        if (!opened.problem.empty())
            throw Error(opened.problem);
        const std::string& name = entry.dataset;
        const std::string ready = kReadyPrefix + name + kRecordSuffix;
        if (::unlinkat(opened.dir.get(), ready.c_str(), 0) != 0 && errno != ENOENT)
            throw_cannot("remove", dir + "/" + ready, errno);
        const std::string contents = kContentsPrefix + name;
        if (::unlinkat(opened.dir.get(), contents.c_str(), 0) != 0 && errno != ENOENT)
            throw_cannot("remove", dir + "/" + contents, errno);
        for (const std::string& tree : {name, std::string(kPartialPrefix) + name, std::string(kIncomingPrefix) + name}) {
            const RemoveResult removed = remove_tree_at(opened.dir.get(), tree, dir);
            if (!removed.ok())
                throw Error(removed.problems.front());
        }
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}

}  // namespace dlstage
