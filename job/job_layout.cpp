#include "job/job_layout.hpp"

#include <sys/stat.h>

#include "job/record_field.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"

namespace dlstage {

namespace {
DatasetLayout layout_in(const std::string& tier_root, const std::string& tier_dir, const std::string& name)
{
    DatasetLayout layout;
    layout.tier_root = tier_root;
    layout.tier_dir = tier_dir;
    // name is a simple name: no '/', no "..".  Relative to ".": no "./".
    const std::string prefix = tier_dir == "." ? "" : tier_dir + "/";
    layout.dataset_dir = prefix + name;
    layout.partial_dir = prefix + kPartialPrefix + name;
    layout.incoming_dir = prefix + kIncomingPrefix + name;
    layout.ready_marker = prefix + kReadyPrefix + name + kRecordSuffix;
    layout.image_dir = prefix + kImagePrefix + name;
    layout.staged_marker = prefix + kStagedPrefix + name + kRecordSuffix;
    layout.lock_file = prefix + kLockPrefix + name;
    layout.contents_file = prefix + kContentsPrefix + name;
    layout.retired_dir = prefix + kRetiredPrefix + name;
    layout.resume_record = prefix + kResumePrefix + name + kRecordSuffix;
    layout.walked_list = prefix + kWalkedPrefix + name;
    layout.pieces_dir = prefix + kPiecesPrefix + name;
    layout.readers_dir = prefix + kReadersPrefix + name;
    layout.version_prefix = prefix + kVersionPrefix + name + "-";
    layout.split_index = prefix + kSplitIndexPrefix + name + kSplitIndexSuffix;
    return layout;
}
}  // namespace

DatasetLayout dataset_layout(const StageItem& item, const TemplateValues& values)
{
    // tier_dir as the prolog made it.
    return layout_in(item.tier.path.root(), tier_directory(item, values), item.dataset.name);
}

DatasetLayout dataset_layout_within(const StageItem& item)
{
    return layout_in(item.tier.path.root(), ".", item.dataset.name);
}

std::string cache_parent_of(const Tier& tier)
{
    return tier.path.root() + "/" + kCacheDirName;
}

std::string cache_dir_of(const Tier& tier, const std::string& user)
{
    return cache_parent_of(tier) + "/" + user;
}

std::string cache_entry_name(const StageItem& item, std::size_t nodes, std::size_t node)
{
    if (!item.split)
        return item.dataset.name;
    return item.dataset.name + ".split-" + std::to_string(node) + "-of-" + std::to_string(nodes);
}

CacheEntryParts cache_entry_parts(const std::string& entry)
{
    const std::string mark = ".split-";
    const std::size_t at = entry.rfind(mark);
    if (at == std::string::npos || at == 0)
        return {entry, 0, 0};
    const std::string rest = entry.substr(at + mark.size());
    const std::size_t of = rest.find("-of-");
    const auto digits = [](const std::string& text) {
        return !text.empty() && text.size() < 10 && text.find_first_not_of("0123456789") == std::string::npos;
    };
    if (of == std::string::npos || !digits(rest.substr(0, of)) || !digits(rest.substr(of + 4)))
        return {entry, 0, 0};
    return {entry.substr(0, at), static_cast<std::size_t>(std::stoul(rest.substr(of + 4))),
            static_cast<std::size_t>(std::stoul(rest.substr(0, of)))};
}

DatasetLayout cache_layout(const StageItem& item, const std::string& user, std::size_t nodes, std::size_t node)
{
    return layout_in(item.tier.path.root(), cache_dir_of(item.tier, user), cache_entry_name(item, nodes, node));
}

DatasetLayout cache_layout_within(const StageItem& item, std::size_t nodes, std::size_t node)
{
    return layout_in(item.tier.path.root(), ".", cache_entry_name(item, nodes, node));
}

namespace {
std::uint64_t count_field(const toml::table& record, const char* key, const std::string& marker_path)
{
    const auto count = integer_field(record, key);
    if (!count || *count < 0)
        throw Error("ready marker " + marker_path + " has no valid '" + key + "' (a count of 0 or more)");
    return static_cast<std::uint64_t>(*count);
}
}  // namespace

void write_ready_marker(const std::string& marker_path, const ReadyMarker& marker)
{
    toml::table record{
        {"dataset", marker.dataset},
        {"tier", marker.tier},
        {"source", marker.source},
        {"path", marker.path},
        {"bytes", static_cast<std::int64_t>(marker.bytes)},
        {"files", static_cast<std::int64_t>(marker.files)},
    };
    if (!marker.index.empty())
        record.insert("index", marker.index);
    write_record(marker_path, record);
}

std::optional<ReadyMarker> read_ready_marker(const std::string& marker_path)
{
    struct stat st {};
    if (lstat(marker_path.c_str(), &st) != 0)
        return std::nullopt;
    if (!S_ISREG(st.st_mode))
        throw Error("ready marker " + marker_path + " is not a regular file");
    return ready_marker_of(read_record(marker_path), marker_path);
}

ReadyMarker ready_marker_of(const toml::table& record, const std::string& marker_path)
{
    ReadyMarker marker;
    marker.dataset = record["dataset"].value_or(std::string());
    marker.tier = record["tier"].value_or(std::string());
    marker.source = record["source"].value_or(std::string());
    marker.path = record["path"].value_or(std::string());
    marker.index = record["index"].value_or(std::string());
    marker.bytes = count_field(record, "bytes", marker_path);
    marker.files = count_field(record, "files", marker_path);
    if (marker.path.empty())
        throw Error("ready marker " + marker_path + " has no path");
    return marker;
}

std::string unprepared_dir(const std::string& what, const std::string& dir, const std::string& problem,
                           const std::string& restarts, const std::string& check)
{
    std::uint64_t requeued = 0;
    try {
        requeued = restarts.empty() ? 0 : parse_count(restarts, 0, kMaxSlurmNumber);
    } catch (const Error&) {
        requeued = 0;  // not Slurm's count: say what a first run would
    }
    std::string message = what + " " + dir + " was not prepared by the prolog: " + problem;
    if (requeued == 0)
        return message + " (if slurmd restarted on this node as the job started, resubmit; if every job hits this, " +
               check + ")";
    return message + " (this run follows a requeue: Slurm before 23.11 skips a requeued job's prolog on a node " +
           "that handled a job credential in the 2 seconds before; requeue the job again)";
}

}  // namespace dlstage
