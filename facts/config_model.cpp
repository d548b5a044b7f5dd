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

const NameTable<Scope>& scope_names()
{
    static const NameTable<Scope> names = {{"node", Scope::Node}, {"shared", Scope::Shared}};
    return names;
}

const NameTable<Cleanup>& cleanup_names()
{
    static const NameTable<Cleanup> names = {{"job-end", Cleanup::JobEnd},
                                             {"cache", Cleanup::Cache},
                                             {"keep", Cleanup::Keep}};
    return names;
}

const NameTable<Mode>& mode_names()
{
    static const NameTable<Mode> names = {{"copy", Mode::Copy}, {"extract", Mode::Extract}, {"mount", Mode::Mount}};
    return names;
}

const NameTable<PurgeBy>& purge_by_names()
{
    static const NameTable<PurgeBy> names = {{"atime", PurgeBy::Atime},
                                             {"mtime", PurgeBy::Mtime},
                                             {"ctime", PurgeBy::Ctime},
                                             {"max", PurgeBy::Max}};
    return names;
}

const NameTable<Reach>& reach_names()
{
    static const NameTable<Reach> names = {{"compute", Reach::Compute}, {"mover", Reach::Mover}};
    return names;
}

const NameTable<Placement>& placement_names()
{
    static const NameTable<Placement> names = {{"whole", Placement::Whole}, {"split", Placement::Split}};
    return names;
}

std::string to_string(Scope scope)
{
    return name_in(scope_names(), scope);
}

std::string to_string(Cleanup cleanup)
{
    return name_in(cleanup_names(), cleanup);
}

std::string to_string(Mode mode)
{
    return name_in(mode_names(), mode);
}

std::string to_string(PurgeBy purge_by)
{
    return name_in(purge_by_names(), purge_by);
}

std::string to_string(Reach reach)
{
    return name_in(reach_names(), reach);
}

std::string to_string(Placement placement)
{
    return name_in(placement_names(), placement);
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
