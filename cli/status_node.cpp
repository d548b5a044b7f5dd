// dlstage status --node NODE: each configured tier as this node sees it:
// its file system's size and use, dlstage's limits there, what the tier
// root holds (job directories and their owners) and the node cache's
// entries (status/node_view finds them).  Node-local tiers are seen only on
// the node itself, so it must run there (srun -w NODE ...).
#include <ctime>
#include <iostream>
#include <unistd.h>

#include <toml++/toml.h>

#include "build-aux/config.h"
#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "job/identity.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "status/node_view.hpp"
#include "status/status_format.hpp"

namespace dlstage::cli {

namespace {
std::optional<std::uint64_t> used(std::optional<std::uint64_t> total, std::optional<std::uint64_t> free)
{
    if (!total || !free || *free > *total)
        return std::nullopt;
    return *total - *free;
}

std::string size_cell(std::optional<std::uint64_t> bytes)
{
    return bytes ? slurm_size(*bytes) : "-";
}

std::string count_cell(std::optional<std::uint64_t> n)
{
    return n ? std::to_string(*n) : "-";
}

void insert_count(toml::table& t, const char* key, std::optional<std::uint64_t> n)
{
    if (n)
        t.insert(key, static_cast<std::int64_t>(std::min<std::uint64_t>(*n, INT64_MAX)));
}

// Root's records of a node cache (last use, the jobs using an entry) are
// 0700/0600 (tier/cache_records.hpp): a user's status shows their own
// entries without them.
bool sees_root_records()
{
    return ::geteuid() == 0;
}

toml::table view_json(const TierView& v)
{
    const Tier& tier = *v.tier;
    toml::table t{{"tier", tier.name}, {"scope", to_string(tier.scope)}, {"root", tier.path.root()}};
    if (!v.problem.empty())
        t.insert("problem", v.problem);
    insert_count(t, "bytes_total", v.space.total_bytes);
    insert_count(t, "bytes_used", used(v.space.total_bytes, v.space.free_bytes));
    insert_count(t, "bytes_limit", v.byte_limit);
    insert_count(t, "inodes_total", v.space.total_inodes);
    insert_count(t, "inodes_used", used(v.space.total_inodes, v.space.free_inodes));
    insert_count(t, "inodes_limit", tier.max_inodes);
    toml::array entries, cache;
    for (const TierEntry& e : v.entries)
        entries.push_back(toml::table{{"name", e.name},
                                      {"owner", e.owner},
                                      {"user_id", static_cast<std::int64_t>(e.uid)},
                                      {"kind", e.kind},
                                      {"mounted", e.mounted}});
    for (const CacheEntry& c : v.cache) {
        toml::array users;
        for (const std::string& u : c.users)
            users.push_back(u);
        toml::array jobs;
        for (const std::string& j : c.jobs)
            jobs.push_back(std::stoll(j));
        toml::table entry{{"dataset", c.dataset},
                          {"bytes", static_cast<std::int64_t>(c.bytes)},
                          {"files", static_cast<std::int64_t>(c.files)},
                          {"users", users}};
        if (sees_root_records()) {
            entry.insert("last_use", c.last_use);
            entry.insert("jobs", jobs);
        }
        cache.push_back(std::move(entry));
    }
    t.insert("entries", entries);
    t.insert("cache_entries", cache);
    return t;
}

void print_views(const std::vector<TierView>& views)
{
    std::vector<std::vector<std::string>> tiers = {{"TIER", "SCOPE", "ROOT", "USED", "SIZE", "LIMIT", "INODES_USED",
                                                    "INODES", "INODE_LIMIT", "ENTRIES", "CACHED"}};
    for (const TierView& v : views)
        tiers.push_back({v.tier->name, to_string(v.tier->scope), v.tier->path.root(),
                         size_cell(used(v.space.total_bytes, v.space.free_bytes)), size_cell(v.space.total_bytes),
                         size_cell(v.byte_limit), count_cell(used(v.space.total_inodes, v.space.free_inodes)),
                         count_cell(v.space.total_inodes), count_cell(v.tier->max_inodes),
                         v.problem.empty() ? std::to_string(v.entries.size()) : "-", std::to_string(v.cache.size())});
    print_aligned(std::cout, tiers);
    std::vector<std::vector<std::string>> entries = {{"TIER", "ENTRY", "OWNER", "KIND"}};
    for (const TierView& v : views)
        for (const TierEntry& e : v.entries)
            entries.push_back({v.tier->name, e.name, e.owner, e.kind + (e.mounted ? " (mounted)" : "")});
    if (entries.size() > 1) {
        std::cout << "\n";
        print_aligned(std::cout, entries);
    }
    std::vector<std::vector<std::string>> cached = {{"TIER", "DATASET", "USER", "SIZE", "FILES", "LAST_USE", "JOBS"}};
    for (const TierView& v : views)
        for (const CacheEntry& c : v.cache)
            cached.push_back({v.tier->name, c.dataset, join(c.users, ","), slurm_size(c.bytes), std::to_string(c.files),
                              c.last_use ? moment_text(c.last_use) : "-", c.jobs.empty() ? "-" : join(c.jobs, ",")});
    if (cached.size() > 1) {
        std::cout << "\n";
        print_aligned(std::cout, cached);
        if (!sees_root_records())
            std::cout << "LAST_USE and JOBS come from root's records on the node: run dlstage status --node as root "
                         "to see them\n";
    }
    for (const TierView& v : views)
        if (!v.problem.empty())
            std::cout << "tier " << v.tier->name << ": " << v.problem << "\n";
}
}  // namespace

int print_node(const Config& config, const std::string& node, bool json)
{
    const std::string here = this_node_name();
    if (node != here) {
        say("status --node " + printable(node) + ": this is " + here + ", and a node's tiers are seen on the node " +
            "itself: run 'srun -w " + printable(node) + " dlstage status --node " + printable(node) +
            "' (or run it there)");
        return kExitFailure;
    }
    std::vector<TierView> views;
    for (const auto& [name, tier] : config.tiers)
        views.push_back(look_at_tier(tier, config.site.state_dir, here));
    if (json) {
        toml::array tiers;
        for (const TierView& v : views)
            tiers.push_back(view_json(v));
        std::cout << toml::json_formatter{toml::table{{"meta", status_meta(PACKAGE_VERSION, static_cast<std::int64_t>(
                                                                                                std::time(nullptr)))},
                                                      {"node", here},
                                                      {"tiers", tiers}}}
                  << "\n";
        return kExitOk;
    }
    print_views(views);
    return kExitOk;
}

}  // namespace dlstage::cli
