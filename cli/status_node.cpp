// dlstage status --node NODE: each configured tier as this node sees it:
// its file system's size and use, dlstage's limits there, what the tier
// root holds (job directories and their owners) and the node cache's
// entries (status/node_view finds them).  Node-local tiers are seen only on
// the node itself; from another host, with [locality] on, what the node's
// features in Slurm say its caches hold.
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

// status --node's JSON: meta, the node and what was seen of it.
void print_node_json(const std::string& node, const char* key, toml::array seen)
{
    std::cout << toml::json_formatter{toml::table{{"meta", status_meta(PACKAGE_VERSION,
                                                                       static_cast<std::int64_t>(std::time(nullptr)))},
                                                  {"node", node},
                                                  {key, std::move(seen)}}}
              << "\n";
}

// Another node, from here: what its features say its caches hold (Slurm
// knows them wherever this runs); its tiers' space and root's records are
// seen on the node itself.
int print_remote_node(const Config& config, const std::string& node, const std::string& here, bool json)
{
    const std::string there = "run 'srun -w " + printable(node) + " dlstage status --node " + printable(node) + "'";
    if (!config.locality.node_features) {
        say("status --node " + printable(node) + ": this is " + here + ", and a node's tiers are seen on the node " +
            "itself: " + there + " (or run it there)");
        return kExitFailure;
    }
    const RemoteNodeView view = look_at_node_features(config, node);
    if (!view.problem.empty()) {
        say("status --node " + printable(node) + ": " + view.problem);
        return kExitFailure;
    }
    if (json) {
        toml::array cached;
        for (const FeatureEntryRow& row : view.cached)
            cached.push_back(toml::table{{"dataset", row.dataset},
                                         {"user", row.user},
                                         {"shares", static_cast<std::int64_t>(row.shares)},
                                         {"feature", row.feature}});
        print_node_json(node, "cached", std::move(cached));
        return kExitOk;
    }
    std::vector<std::vector<std::string>> rows = {{"DATASET", "USER", "SHARE", "FEATURE"}};
    for (const FeatureEntryRow& row : view.cached)
        rows.push_back(
            {row.dataset, row.user, row.shares ? "a share of " + std::to_string(row.shares) : "whole", row.feature});
    std::cout << "node " << node << ": node caches, as its features in Slurm say\n";
    if (rows.size() > 1)
        print_aligned(std::cout, rows);
    else
        std::cout << "(none)\n";
    std::cout << "sizes, last uses and the tiers themselves are seen on the node: " << there << "\n";
    return kExitOk;
}
}  // namespace

int print_node(const Config& config, const std::string& node, bool json)
{
    const std::string here = this_node_name();
    if (node != here)
        return print_remote_node(config, node, here, json);
    std::vector<TierView> views;
    for (const auto& [name, tier] : config.tiers)
        views.push_back(look_at_tier(tier, config.site.state_dir, here));
    if (json) {
        toml::array tiers;
        for (const TierView& v : views)
            tiers.push_back(view_json(v));
        print_node_json(here, "tiers", std::move(tiers));
        return kExitOk;
    }
    print_views(views);
    return kExitOk;
}

}  // namespace dlstage::cli
