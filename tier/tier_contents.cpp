#include "tier/tier_contents.hpp"

#include "tier/cache_measure.hpp"

#include <algorithm>
#include <sys/stat.h>

#include "job/identity.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/quick_stat.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

namespace {
// Each user's cache directory is measured within this (a hung mount in it
// leaves that user's entries out).
constexpr double kCacheLookSeconds = 10;
}  // namespace

namespace {
std::string kind_of(mode_t mode)
{
    if (S_ISDIR(mode))
        return "directory";
    if (S_ISREG(mode))
        return "file";
    if (S_ISLNK(mode))
        return "symlink";
    return "other";
}
}  // namespace

TierContents tier_contents(const std::string& root)
{
    const OpenResult opened = look_into_tier_root(root);
    if (!opened.problem.empty())
        throw Error(opened.problem);
    TierContents contents;
    if (!opened.dir.valid())
        return contents;
    contents.exists = true;
    contents.space = measure_tier_space(opened.dir.get(), root);
    std::vector<TierEntry>& entries = contents.entries;
    const MountTable mounts = MountTable::current();
    DirStream list(opened.dir.get());
    while (const dirent* e = list.valid() ? list.next() : nullptr) {
        TierEntry entry;
        entry.name = printable(e->d_name);
        entry.mounted = mounts.at(root + "/" + e->d_name).has_value();
        QuickStat facts;
        // An entry with a mount on it is not even asked: its server may be stopped.
        if (!entry.mounted && quick_stat(opened.dir.get(), e->d_name, AT_SYMLINK_NOFOLLOW, facts)) {
            entry.uid = facts.uid;
            entry.owner = user_name_of(facts.uid);
            entry.kind = kind_of(facts.mode);
        } else {
            entry.owner = "?";
            entry.kind = entry.mounted ? "mount" : "?";
        }
        entries.push_back(std::move(entry));
    }
    std::sort(entries.begin(), entries.end(), [](const TierEntry& a, const TierEntry& b) { return a.name < b.name; });
    return contents;
}

std::vector<CacheEntry> cache_entries(const Tier& tier, const std::string& state_dir, const std::string& node)
{
    std::vector<CacheEntry> entries;
    if (!tier.node_cache())
        return entries;
    for (const NodeCacheEntry& e :
         find_cache_entries(tier, state_dir, node, kCacheLookSeconds, 3 * kCacheLookSeconds).entries)
        if (e.measured)  // status lists what it measured
            entries.push_back({e.dataset, e.bytes, e.files, e.last_use, {e.user}, e.jobs});
    return entries;
}

}  // namespace dlstage
