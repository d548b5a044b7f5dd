#include "tier/cache_entry.hpp"

#include <algorithm>
#include <cerrno>
#include <grp.h>
#include <pwd.h>
#include <regex>
#include <unistd.h>

#include "dataset/source_probe.hpp"
#include "job/job_layout.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/bounded.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/group_list.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

const std::vector<std::string>& NodeCacheEntry::owner_jobs() const
{
    static const std::vector<std::string> none;
    return owner_uses ? owner_uses->jobs : none;
}

const std::set<std::string>& NodeCacheEntry::owner_datasets() const
{
    static const std::set<std::string> none;
    return owner_uses ? owner_uses->datasets : none;
}

NodeCacheEntry entry_owned_by(const std::string& user, uid_t uid, gid_t gid, const std::string& dataset)
{
    NodeCacheEntry entry;
    entry.user = user;
    entry.uid = uid;
    entry.gid = gid;
    entry.dataset = dataset;
    return entry;
}

std::string entry_name(const NodeCacheEntry& entry)
{
    if (entry.aside)  // its name holds the user's already
        return printable(entry.dataset) + " (moved aside)";
    if (entry.unlisted && entry.measured)
        return printable(entry.user) + "'s cache directory (too many names to list: one entry)";
    if (entry.unlisted)
        return printable(entry.user) + "'s cache directory (not listed in time)";
    return printable(entry.user + "/" + entry.dataset);  // a name may hold a newline
}

namespace cache_detail {

void act_as(uid_t uid, gid_t gid, const std::string& user)
{
    if (::geteuid() == uid)
        return;
    const std::vector<gid_t> groups = user.empty() ? std::vector<gid_t>{} : group_list(user, gid);
    const auto keep = static_cast<uid_t>(-1);
    if (::setgroups(groups.size(), groups.data()) != 0 ||
        ::setresgid(static_cast<gid_t>(-1), gid, static_cast<gid_t>(-1)) != 0 || ::setresuid(keep, uid, keep) != 0)
        throw_cannot("act as uid " + std::to_string(uid) + " for", "the node cache", errno);
}

namespace {
// The dataset part of a name of dlstage's making (job/job_layout.hpp's
// prefixes and suffix); "" when it has none ("imagenet", a bare
// ".partial-", "...tmp.x").
std::string dataset_part(const std::string& name)
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
    return "";
}
}  // namespace

std::string dataset_of(const std::string& name)
{
    if (name.empty() || name == "." || name == "..")
        return "";
    // Anything else the user put there counts, and may go, as an entry of
    // its own, a name whose dataset part is empty too (".ready-",
    // "...tmp.x"): nothing in a cache directory escapes the watermarks.
    std::string dataset = dataset_part(name);
    return dataset.empty() ? name : dataset;
}

std::vector<std::string> derived_names(const std::string& dataset)
{
    std::vector<std::string> candidates{dataset};
    for (const char* prefix : {kReadyPrefix, kStagedPrefix, kResumePrefix}) {
        candidates.push_back(prefix + dataset + kRecordSuffix);
        candidates.push_back(prefix + dataset);
    }
    for (const char* prefix : {kContentsPrefix, kPartialPrefix, kIncomingPrefix, kLockPrefix, kImagePrefix})
        candidates.push_back(prefix + dataset);
    // Only those that are its by the one rule (".ready-x.toml" is x's, not
    // the entry "x.toml"'s).
    std::vector<std::string> names;
    for (const std::string& name : candidates)
        if (dataset_of(name) == dataset)
            names.push_back(name);
    return names;
}

namespace {
// NAME.untrusted-YYYYMMDDTHHMMSSZ-PID[-N], as tier/tier_walk names what
// it moves aside, and no user's name (whose cache directory it would be).
bool is_aside(const std::string& name)
{
    static const std::regex aside(R"(.+\.untrusted-[0-9]{8}T[0-9]{6}Z-[0-9]+(-[0-9]+)?)");
    return std::regex_match(name, aside) && ::getpwnam(name.c_str()) == nullptr;
}
}  // namespace

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

std::vector<std::string> measuring_order(std::vector<std::string> datasets,
                                         const std::map<std::string, std::uint64_t>& measured_at)
{
    const auto when = [&measured_at](const std::string& dataset) {
        const auto found = measured_at.find(dataset);
        return found == measured_at.end() ? std::int64_t{-1} : static_cast<std::int64_t>(found->second);
    };
    std::sort(datasets.begin(), datasets.end(), [&](const std::string& a, const std::string& b) {
        return when(a) != when(b) ? when(a) < when(b) : a < b;
    });
    return datasets;
}

std::vector<MeasuringSlot> measuring_slots(const std::vector<std::string>& names,
                                           const std::vector<std::string>& asides)
{
    std::map<std::string, MeasuringSlot> by_owner;
    for (const std::string& name : names) {
        by_owner[name].owner = name;
        by_owner[name].has_directory = true;
    }
    for (const std::string& aside : asides) {
        const std::string owner = aside.substr(0, aside.rfind(".untrusted-"));
        by_owner[owner].owner = owner;
        by_owner[owner].asides.push_back(aside);
    }
    std::vector<MeasuringSlot> slots;
    for (auto& [owner, slot] : by_owner)
        slots.push_back(std::move(slot));
    return slots;
}

namespace {
std::string not_entered(const std::string& shown, const MountEntry& mount)
{
    // A FUSE type holds the user's own subtype: quoted unless it is plain.
    const bool plain = mount.fstype.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
    return shown_path(shown) + ": a mount (" + (plain ? mount.fstype : quoted(mount.fstype)) + ") at " +
           shown_path(mount.point) + "; not entered: neither measured nor evicted";
}
}  // namespace

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
        found.datasets.emplace(dataset_of(name), not_entered(dir + "/" + name, mount));
    }
    return found;
}

}  // namespace cache_detail

ProbedSource probe_source_as(const Dataset& dataset, const std::string& manifest_dir, const std::string& user,
                             uid_t uid, gid_t gid, double seconds)
{
    const BoundedOutcome outcome = run_bounded(seconds, [&] {
        cache_detail::act_as(uid, gid, user);
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
    if (space != std::string::npos && read_count(outcome.output.substr(0, space), value))
        probed.bytes = value;
    if (space != std::string::npos && read_count(outcome.output.substr(space + 1), value))
        probed.files = value;
    return probed;
}

}  // namespace dlstage
