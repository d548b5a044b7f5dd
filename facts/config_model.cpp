// What the configuration's types answer of themselves: no file read, no
// TOML (that is config/config); the policies and their unit tests link this
// (libdlbase).
#include "facts/config_model.hpp"

#include <algorithm>
#include <cctype>

#include "lib/contract.hpp"
#include "lib/strings.hpp"

namespace dlstage {

std::string SiteSettings::manifests() const
{
    return manifest_dir.empty() ? state_dir + "/manifests" : manifest_dir;
}

std::string to_string(Scope scope)
{
    return scope == Scope::Node ? "node" : "shared";
}

std::string to_string(Cleanup cleanup)
{
    switch (cleanup) {
    case Cleanup::JobEnd: return "job-end";
    case Cleanup::Cache: return "cache";
    case Cleanup::Keep: return "keep";
    }
    return "?";
}

std::string to_string(Mode mode)
{
    switch (mode) {
    case Mode::Copy: return "copy";
    case Mode::Extract: return "extract";
    case Mode::Mount: return "mount";
    }
    return "?";
}

std::string to_string(PurgeBy purge_by)
{
    switch (purge_by) {
    case PurgeBy::Atime: return "atime";
    case PurgeBy::Mtime: return "mtime";
    case PurgeBy::Ctime: return "ctime";
    case PurgeBy::Max: return "max";
    }
    return "?";
}

std::string to_string(Reach reach)
{
    return reach == Reach::Mover ? "mover" : "compute";
}

std::string to_string(Placement placement)
{
    return placement == Placement::Split ? "split" : "whole";
}

bool Tier::charged_by_default() const
{
    const std::string& root = path.root();
    return scope == Scope::Node && (root == "/dev/shm" || starts_with(root, "/dev/shm/"));
}

std::string Tier::origin_of(const std::string& key) const
{
    const auto it = origin.find(key);
    return it == origin.end() ? "default" : it->second;
}

std::string Override::conditions() const
{
    std::vector<std::string> parts;
    for (const auto& [key, value] :
         {std::pair{"partition", &partition}, {"account", &account}, {"group", &group}, {"user", &user}})
        if (!value->empty())
            parts.push_back(std::string(key) + "=" + printable(*value));
    return join(parts, ", ");
}

std::string Override::label() const
{
    return "overrides[" + std::to_string(index) + "] (" + conditions() + ", line " + std::to_string(line) + ")";
}

Format Dataset::known_format() const
{
    return format != Format::Auto ? format : format_from_name(source);
}

const Tier* Config::find_tier(std::string_view name) const
{
    const auto it = tiers.find(std::string(name));
    return it == tiers.end() ? nullptr : &it->second;
}

const Dataset* Config::find_dataset(std::string_view name) const
{
    const auto it = datasets.find(std::string(name));
    return it == datasets.end() ? nullptr : &it->second;
}

std::vector<std::string> Config::tier_names() const
{
    std::vector<std::string> names;
    for (const auto& entry : tiers)
        names.push_back(entry.first);
    return names;
}

std::vector<std::string> Config::dataset_names() const
{
    std::vector<std::string> names;
    for (const auto& entry : datasets)
        names.push_back(entry.first);
    return names;
}

bool Config::matches_groups() const
{
    return std::any_of(overrides.begin(), overrides.end(), [](const Override& rule) { return !rule.group.empty(); });
}

std::string dataset_env_name(std::string_view dataset_name)
{
    std::string env = kDatasetEnvPrefix;
    for (const char c : dataset_name)
        env += std::isalnum(static_cast<unsigned char>(c))
                   ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                   : '_';
    return env;
}

}  // namespace dlstage
