#include "tier/cache_entries.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <grp.h>
#include <map>
#include <mutex>
#include <optional>
#include <pwd.h>
#include <regex>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "dataset/source_probe.hpp"
#include "job/job_layout.hpp"
#include "job/record_field.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/group_list.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "tier/safe_fs.hpp"
#include "tier/tier_walk.hpp"

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

std::string entry_name(const NodeCacheEntry& entry)
{
    if (entry.aside)  // its name holds the user's already
        return printable(entry.dataset) + " (moved aside)";
    if (entry.unlisted)
        return printable(entry.user) + "'s cache directory (not listed in time)";
    return printable(entry.user + "/" + entry.dataset);  // a name may hold a newline
}

namespace {
// In a child about to act for `uid`: that user's identity for the file
// system (effective uid and gid; with `user`, also their supplementary
// groups, to read a source that is theirs through a group).  The real and
// saved uid stay root's: the user may not signal the child (a SIGSTOP
// would hold it, and the lock its parent holds, to its time limit), and
// FUSE refuses it a mount of theirs without allow_other at once.
void act_as(uid_t uid, gid_t gid, const std::string& user = "")
{
    if (::geteuid() == uid)
        return;
    const std::vector<gid_t> groups = user.empty() ? std::vector<gid_t>{} : group_list(user, gid);
    const auto keep = static_cast<uid_t>(-1);
    if (::setgroups(groups.size(), groups.data()) != 0 ||
        ::setresgid(static_cast<gid_t>(-1), gid, static_cast<gid_t>(-1)) != 0 || ::setresuid(keep, uid, keep) != 0)
        throw_cannot("act as uid " + std::to_string(uid) + " for", "the node cache", errno);
}

// The dataset an entry's name belongs to: "imagenet" for imagenet/,
// .ready-imagenet.toml, .contents-imagenet, .partial-imagenet, ...
std::string dataset_of(const std::string& name)
{
    if (name.empty() || name[0] != '.')
        return name;
    // A record being replaced (lib/sys/replace_file: ".NAME.tmp.PID.X") is
    // its record's: a staging at work writes it.
    if (const std::size_t tmp = name.rfind(".tmp.");
        name.size() > 2 && name[1] == '.' && tmp != std::string::npos && tmp > 1)
        return dataset_of(name.substr(1, tmp - 1));
    for (const char* prefix : {kReadyPrefix, kContentsPrefix, kPartialPrefix, kIncomingPrefix, kLockPrefix,
                               kImagePrefix, kStagedPrefix, kResumePrefix}) {
        if (starts_with(name, prefix)) {
            std::string rest = name.substr(std::string(prefix).size());
            const bool record = prefix == std::string(kReadyPrefix) || prefix == std::string(kStagedPrefix) ||
                                prefix == std::string(kResumePrefix);
            if (record && ends_with(rest, kRecordSuffix))
                rest.resize(rest.size() - std::string(kRecordSuffix).size());
            return rest;
        }
    }
    if (starts_with(name, kRetiredPrefix)) {  // .retired-NAME-JOB
        const std::string rest = name.substr(std::string(kRetiredPrefix).size());
        if (rest.rfind('-') != std::string::npos && rest.rfind('-') > 0)
            return rest.substr(0, rest.rfind('-'));
    }
    // Anything else the user put there counts, and may go, as an entry of
    // its own: nothing in a cache directory escapes the watermarks.
    return name == "." || name == ".." ? "" : name;
}

// ".retired-NAME-JOB" for NAME: what a replaced copy of NAME left.
bool is_retired_copy_of(const std::string& entry, const std::string& name)
{
    const std::string prefix = kRetiredPrefix + name + "-";
    return starts_with(entry, prefix) && entry.size() > prefix.size() &&
           entry.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

// The measuring child's answer: per dataset its name, bytes, inodes, files,
// whether its ready record is there (1, 0) and its newest ctime (the user
// cannot set a ctime back), each field ended by a NUL.
// Names are the user's (a directory called "x 999999999999 1 1\nother" is
// allowed), and NUL is the one byte no name can hold, so no name can forge
// a field or an entry.
struct Sum {
    std::uint64_t bytes = 0, inodes = 0, files = 0;
    bool ready = false;
    std::int64_t changed = 0;
};

constexpr std::size_t kSumFields = 6;

std::string encode_sums(const std::map<std::string, Sum>& sums)
{
    std::string out;
    for (const auto& [dataset, sum] : sums)
        for (const std::string& field :
             {dataset, std::to_string(sum.bytes), std::to_string(sum.inodes), std::to_string(sum.files),
              std::string(sum.ready ? "1" : "0"), std::to_string(sum.changed)})
            out.append(field).push_back('\0');
    return out;
}

// The measuring child's first part: the datasets it is about to measure,
// each ended by a NUL; then one part of encode_sums per dataset measured.
std::string encode_names(const std::vector<std::string>& names)
{
    std::string out;
    for (const std::string& name : names)
        out.append(name).push_back('\0');
    return out;
}

// The NUL-ended fields of what the child sent; throws Error naming `what`
// (the listing, the measurement) on a field cut off.
std::vector<std::string> nul_ended_fields(const std::string& text, const std::string& what)
{
    std::vector<std::string> fields;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t nul = text.find('\0', at);
        if (nul == std::string::npos)
            throw Error(what + " ends in the middle of a field");
        fields.push_back(text.substr(at, nul - at));
        at = nul + 1;
    }
    return fields;
}

bool parse_count(const std::string& text, std::uint64_t& value)
{
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return !text.empty() && ec == std::errc() && ptr == end;
}

// Throws Error on anything but what encode_sums writes.
std::vector<NodeCacheEntry> decode_sums(const std::string& text, const NodeCacheEntry& owner)
{
    const std::vector<std::string> fields = nul_ended_fields(text, "the measurement");
    if (fields.size() % kSumFields != 0)
        throw Error("the measurement has " + std::to_string(fields.size()) + " fields, not a multiple of " +
                    std::to_string(kSumFields));
    std::vector<NodeCacheEntry> entries;
    for (std::size_t i = 0; i < fields.size(); i += kSumFields) {
        NodeCacheEntry entry = owner;
        entry.dataset = fields[i];
        std::uint64_t changed = 0;
        if (entry.dataset.empty() || !parse_count(fields[i + 1], entry.bytes) ||
            !parse_count(fields[i + 2], entry.inodes) || !parse_count(fields[i + 3], entry.files) ||
            (fields[i + 4] != "0" && fields[i + 4] != "1") || !parse_count(fields[i + 5], changed))
            throw Error("the measurement has an unreadable entry");
        entry.ready = fields[i + 4] == "1";
        entry.changed = static_cast<std::int64_t>(changed);
        entries.push_back(entry);
    }
    return entries;
}

// Adds what one name takes to a sum.  A file with several links is counted
// once, at its first name: a thousand links to one file are not a thousand
// files' worth of room.
struct Tally {
    std::set<std::pair<dev_t, ino_t>> linked;

    bool add(Sum& sum, const struct stat& st)
    {
        if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) && !linked.insert({st.st_dev, st.st_ino}).second)
            return false;
        sum.bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
        sum.inodes += 1;
        sum.changed = std::max(sum.changed, static_cast<std::int64_t>(st.st_ctim.tv_sec));
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
    std::mutex mutex;
    try {
        walk_tree(dir.get(), shown, 4, [&](const FoundEntry& found) {
            const std::lock_guard<std::mutex> lock(mutex);
            if (tally.add(sum, found.st) && S_ISREG(found.st.st_mode))
                sum.files += 1;
        });
    } catch (const Error&) {
        // A part the owner cannot read: what was counted stays.
    }
    send(encode_sums({{name, sum}}));
    return "";
}

// In the child, as the user: the entries of `dir`, leaving out every name
// of a dataset in `skipped` (one of its names holds a mount).  All names
// are listed first and sent as one part, then each dataset is measured
// whole and sent as it is done: when the time runs out, what was measured
// counts, and what was listed is known to be there.
std::string measure_user_dir(const std::string& root, const std::string& dir, const std::set<std::string>& skipped,
                             const SendPart& send)
{
    OpenResult opened = open_job_dir(root, dir);
    if (!opened.problem.empty())
        throw Error(opened.problem);
    std::map<std::string, std::vector<std::string>> names_of;
    {
        const Fd reading = reopen_for_reading(opened.dir);
        DirStream stream(reading.get());
        while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
            const std::string name = e->d_name;
            const std::string dataset = dataset_of(name);
            if (!dataset.empty() && !skipped.count(dataset))
                names_of[dataset].push_back(name);
        }
    }
    std::vector<std::string> datasets;
    for (const auto& [dataset, names] : names_of)
        datasets.push_back(dataset);
    send(encode_names(datasets));
    Tally tally;
    const auto add = [&tally](Sum& sum, const struct stat& st) { return tally.add(sum, st); };
    for (const auto& [dataset, names] : names_of) {
        Sum sum;
        for (const std::string& name : names) {
            struct stat st {};
            if (::fstatat(opened.dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (name == kReadyPrefix + dataset + kRecordSuffix)
                sum.ready = true;
            if (!add(sum, st) || !S_ISDIR(st.st_mode))
                continue;
            Fd sub(::openat(opened.dir.get(), name.c_str(), kDirFlags));
            if (!sub.valid())
                continue;
            std::mutex mutex;
            const bool copy = name == dataset;
            try {
                walk_tree(sub.get(), dir + "/" + name, 4, [&, &sum = sum](const FoundEntry& found) {
                    const std::lock_guard<std::mutex> lock(mutex);
                    if (add(sum, found.st) && copy && S_ISREG(found.st.st_mode))
                        sum.files += 1;
                });
            } catch (const Error&) {
                // A part the owner cannot read (chmod 000): what was counted
                // stays, so that hiding a part does not hide the entry.
            }
        }
        send(encode_sums({{dataset, sum}}));
    }
    return "";
}

// The users with a directory below <root>/.cache: names only, read as
// root from the root-owned level (nothing in a user's directory is looked
// at), and where the kernel has that level, to find mounts below it.
struct CacheUsers {
    std::vector<std::string> names;
    std::vector<std::string> asides;  // NAME.untrusted-STAMP: what a prolog moved aside (tier/tier_walk)
    std::string real_parent;
    Fd parent;  // the cache parent (O_PATH)
};

// NAME.untrusted-YYYYMMDDTHHMMSSZ-PID[-N], as tier/tier_walk names what
// it moves aside, and no user's name (whose cache directory it would be).
bool is_aside(const std::string& name)
{
    static const std::regex aside(R"(.+\.untrusted-[0-9]{8}T[0-9]{6}Z-[0-9]+(-[0-9]+)?)");
    return std::regex_match(name, aside) && ::getpwnam(name.c_str()) == nullptr;
}

CacheUsers cache_users(const Tier& tier, std::vector<std::string>& problems)
{
    CacheUsers users;
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
    users.real_parent = kernel_path(opened.dir.get());
    if (users.real_parent.empty()) {
        problems.push_back("cannot tell where " + cache_parent_of(tier) + " is (/proc not mounted?); nothing measured");
        return users;
    }
    const Fd reading = reopen_for_reading(opened.dir);  // open_trusted_dir's is a passage (O_PATH)
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr)
        (is_aside(e->d_name) ? users.asides : users.names).push_back(e->d_name);
    std::sort(users.names.begin(), users.names.end());
    std::sort(users.asides.begin(), users.asides.end());
    users.parent = std::move(opened.dir);
    return users;
}

// The mounts in one user's cache directory, as mountinfo lists them: the
// directory itself may be one (`whole`), else the datasets whose names
// hold one are left alone, neither measured nor evicted, each with a line
// saying why.  Nothing here asks the file system.
struct MountsInCache {
    std::optional<std::string> whole;
    std::map<std::string, std::string> datasets;  // the line saying why, by dataset

    std::set<std::string> names() const
    {
        std::set<std::string> out;
        for (const auto& [dataset, why] : datasets)
            out.insert(dataset);
        return out;
    }
};

std::string not_entered(const std::string& shown, const MountEntry& mount)
{
    // A FUSE type holds the user's own subtype: quoted unless it is plain.
    const bool plain = mount.fstype.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
    return shown_path(shown) + ": a mount (" + (plain ? mount.fstype : quoted(mount.fstype)) + ") at " +
           shown_path(mount.point) + "; not entered: neither measured nor evicted";
}

MountsInCache mounts_in(const MountTable& mounts, const std::string& real_dir, const std::string& dir)
{
    MountsInCache found;
    for (const std::string& point : mounts.points_within(real_dir)) {
        const MountEntry mount = *mounts.at(point);
        if (point == real_dir) {
            found.whole = not_entered(dir, mount);
            continue;
        }
        const std::string below = point.substr(real_dir.size() + 1);
        const std::string name = below.substr(0, below.find('/'));
        const std::string dataset = dataset_of(name).empty() ? name : dataset_of(name);
        found.datasets.emplace(dataset, not_entered(dir + "/" + name, mount));
    }
    return found;
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

// How long measuring may take: each user's directory at most `each`, all
// of them together until `until` (`total` after the start, for messages),
// and each no more than its fair share of what is left: one slow directory
// that comes first in the listing cannot take every later one's time.
struct MeasureBudget {
    double each;
    double total;
    std::chrono::steady_clock::time_point until;
    std::size_t remaining;  // directories still to measure, this one included

    double next_share()
    {
        const double left = std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
        const double share = left / static_cast<double>(std::max<std::size_t>(1, remaining));
        if (remaining > 0)
            --remaining;
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
        for (NodeCacheEntry& entry : decode_sums(parts[i], owner))
            by_dataset[entry.dataset] = std::move(entry);
    std::vector<NodeCacheEntry> entries;
    for (const std::string& dataset : nul_ended_fields(parts.front(), "the listing")) {
        const auto measured = by_dataset.find(dataset);
        if (measured != by_dataset.end()) {
            entries.push_back(measured->second);
            continue;
        }
        NodeCacheEntry entry = owner;
        entry.dataset = dataset;
        entry.measured = false;
        entries.push_back(std::move(entry));
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
}  // namespace

FoundCacheEntries find_cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node,
                                     double each_seconds, double total_seconds)
{
    MeasureBudget budget{each_seconds, total_seconds,
                         std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(total_seconds)),
                         0};
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
    budget.remaining = ::geteuid() == 0 ? users.names.size() + users.asides.size() : 1;
    for (const std::string& user : users.names) {
        const struct passwd* pw = ::getpwnam(user.c_str());
        if (!pw) {
            found.problems.push_back(cache_dir_of(tier, user) + ": no such user");
            continue;
        }
        NodeCacheEntry owner;
        owner.user = user;
        owner.uid = pw->pw_uid;
        owner.gid = pw->pw_gid;
        if (::geteuid() != 0 && ::geteuid() != owner.uid)
            continue;  // another user's: theirs to see
        const std::string dir = cache_dir_of(tier, user);
        const MountsInCache mounted = mounts_in(mounts, users.real_parent + "/" + user, dir);
        if (mounted.whole) {
            found.problems.push_back(*mounted.whole);
            continue;
        }
        for (const auto& [dataset, why] : mounted.datasets)
            found.problems.push_back(why);
        const std::set<std::string> skipped = mounted.names();
        NodeCacheEntry unlisted = owner;
        unlisted.measured = false;
        unlisted.unlisted = true;
        measure_as_owner(
            owner, unlisted, dir, budget,
            [&](const SendPart& send) { return measure_user_dir(tier.path.root(), dir, skipped, send); }, found);
    }
    if (::geteuid() == 0)  // asides are root's to look at (and detach mounts in)
        for (const std::string& name : users.asides)
            measure_aside_entry(tier, users, mounts, name, budget, found);
    add_root_records(found.entries, tier, state_dir, node);
    return found;
}

namespace {
// The cache parent and the mounts in its directory `name` (shown as
// `dir`) as mountinfo lists them now, before removing anything there; or
// why not (`problem`: the parent gone, or mountinfo unreadable).
struct MountsNow {
    CacheUsers users;
    MountsInCache mounted;
    std::string problem;
};

MountsNow mounts_now(const Tier& tier, const std::string& name, const std::string& dir)
{
    MountsNow now;
    std::vector<std::string> problems;
    now.users = cache_users(tier, problems);
    if (now.users.real_parent.empty()) {
        now.problem = problems.empty() ? dir + ": not found" : problems.front();
        return now;
    }
    try {
        now.mounted = mounts_in(MountTable::current(), now.users.real_parent + "/" + name, dir);
    } catch (const Error& e) {
        now.problem = std::string(e.what()) + ": not evicted (a mount in it could hang the removal)";
    }
    return now;
}

// Why nothing may be removed from `dir`, the cache parent's directory
// `name` (a user's, or an aside), for `dataset` (nullptr: for anything in
// it): a mount on it or on what is to go, made since it was measured, or
// the cache parent gone; "" when removing may go on.
std::string mounted_in_the_way(const Tier& tier, const std::string& name, const std::string& dir,
                               const std::string* dataset)
{
    const MountsNow now = mounts_now(tier, name, dir);
    if (!now.problem.empty())
        return now.problem;
    if (now.mounted.whole)
        return *now.mounted.whole;
    if (!dataset && !now.mounted.datasets.empty())
        return now.mounted.datasets.begin()->second;
    if (const auto it = dataset ? now.mounted.datasets.find(*dataset) : now.mounted.datasets.end();
        it != now.mounted.datasets.end())
        return it->second;
    return "";
}

// Everything below the aside goes as its owner (setfsuid), the emptied
// directory, in root's cache parent, as root: as the epilog removes a job
// directory (tier/safe_fs).
std::string evict_aside(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    const std::string dir = cache_parent_of(tier) + "/" + entry.dataset;
    if (std::string why = mounted_in_the_way(tier, entry.dataset, dir, nullptr); !why.empty())
        return why;
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        const RemoveResult removed = remove_tree_within(tier.path.root(), dir, Owner{entry.uid, entry.gid});
        if (!removed.ok())
            throw Error(removed.problems.front());
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}

// A user's directory that could not be listed in time: everything in it
// goes, as its owner, but the datasets their jobs here use and those a
// mount is in; each name as it is read (the listing is what was slow),
// its dataset's ready record first, so that no job looking meanwhile takes
// a copy being removed for a whole one.  What is left when the time is up
// goes next time.  When its owner has no job here, the directory is first
// renamed aside in root's cache parent (no listing needed, however many
// names it holds) and removed from there as its time allows; an aside
// left goes as asides do.
std::string evict_unlisted(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const auto left = [until] {
        return std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
    };
    const std::string dir = cache_dir_of(tier, entry.user);
    std::set<std::string> kept = entry.owner_datasets;
    {
        const MountsNow now = mounts_now(tier, entry.user, dir);
        if (!now.problem.empty())
            return now.problem;
        if (now.mounted.whole)
            return *now.mounted.whole;
        for (const auto& [dataset, why] : now.mounted.datasets)
            kept.insert(dataset);
        const CacheUsers& users = now.users;
        if (kept.empty()) {
            NodeCacheEntry aside = entry;
            aside.unlisted = false;
            aside.aside = true;
            const std::string stamp = utc_stamp(std::time(nullptr));
            int err = EEXIST;
            for (int n = 0; n < 100 && err == EEXIST; ++n) {
                aside.dataset = tier_walk::aside_name(entry.user, stamp, n);
                err = ::renameat2(users.parent.get(), entry.user.c_str(), users.parent.get(), aside.dataset.c_str(),
                                  RENAME_NOREPLACE) == 0
                          ? 0
                          : errno;
            }
            if (err != 0)
                return cannot("move aside", dir, err);
            return left() < 0.5 ? "" : evict_aside(tier, aside, left());
        }
    }
    if (left() < 0.5)
        return dir + ": no time left to evict";
    const BoundedOutcome outcome = run_bounded(left(), [&] {
        act_as(entry.uid, entry.gid);
        OpenResult opened = open_job_dir(tier.path.root(), dir);
        if (!opened.problem.empty())
            throw Error(opened.problem);
        const int at = opened.dir.get();
        const auto remove = [&](const std::string& name) {
            if (::unlinkat(at, name.c_str(), 0) == 0 || errno == ENOENT)
                return;
            if (errno != EISDIR)
                throw_cannot("remove", dir + "/" + name, errno);
            const RemoveResult removed = remove_tree_at(at, name, dir);
            if (!removed.ok())
                throw Error(removed.problems.front());
        };
        const Fd reading = reopen_for_reading(opened.dir);
        DirStream stream(reading.get());
        while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
            const std::string name = e->d_name;
            const std::string dataset = dataset_of(name);
            if (dataset.empty() || kept.count(dataset))
                continue;
            remove(kReadyPrefix + dataset + kRecordSuffix);
            remove(name);
        }
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
}
}  // namespace

std::string evict_cache_entry(const Tier& tier, const NodeCacheEntry& entry, double seconds)
{
    if (entry.aside)
        return evict_aside(tier, entry, seconds);
    if (entry.unlisted)
        return evict_unlisted(tier, entry, seconds);
    const std::string dir = cache_dir_of(tier, entry.user);
    // A mount made since the entry was measured: left alone as well.
    if (std::string why = mounted_in_the_way(tier, entry.user, dir, &entry.dataset); !why.empty())
        return why;
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        act_as(entry.uid, entry.gid);
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
        std::vector<std::string> trees{name, std::string(kPartialPrefix) + name, std::string(kIncomingPrefix) + name,
                                       std::string(kImagePrefix) + name, std::string(kStagedPrefix) + name};
        const Fd reading = reopen_for_reading(opened.dir);
        DirStream stream(reading.get());
        while (const dirent* e = stream.valid() ? stream.next() : nullptr)
            if (is_retired_copy_of(e->d_name, name))
                trees.push_back(e->d_name);
        for (const std::string& tree : trees) {
            const RemoveResult removed = remove_tree_at(opened.dir.get(), tree, dir);
            if (!removed.ok())
                throw Error(removed.problems.front());
        }
        return std::string();
    });
    return outcome.status == BoundedOutcome::Status::Done ? "" : outcome.problem;
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

ProbedSource probe_source_as(const Dataset& dataset, const std::string& manifest_dir, const std::string& user,
                             uid_t uid, gid_t gid, double seconds)
{
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        act_as(uid, gid, user);
        const SourceFacts facts = probe_source(dataset, manifest_dir);
        if (facts.state != SourceFacts::State::Present)
            throw Error(facts.problem);
        const auto number = [](const std::optional<std::uint64_t>& n) { return n ? std::to_string(*n) : "-"; };
        return number(facts.bytes) + " " + number(facts.files);
    });
    ProbedSource probed;
    if (outcome.status != BoundedOutcome::Status::Done) {
        probed.problem = outcome.problem;
        return probed;
    }
    const std::size_t space = outcome.output.find(' ');
    std::uint64_t value = 0;
    if (space != std::string::npos && parse_count(outcome.output.substr(0, space), value))
        probed.bytes = value;
    if (space != std::string::npos && parse_count(outcome.output.substr(space + 1), value))
        probed.files = value;
    return probed;
}

}  // namespace dlstage
