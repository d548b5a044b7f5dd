#include "lib/copy_record.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/record_field.hpp"
#include "lib/state_record.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
std::int64_t signed_of(std::uint64_t value)
{
    return static_cast<std::int64_t>(value);
}

std::int64_t number_field(const toml::table& table, const char* key, const std::string& name)
{
    const auto value = integer_field(table, key);
    if (!value || *value < 0)
        throw Error("copy record " + name + " has no valid '" + key + "'");
    return *value;
}
}  // namespace

toml::table copy_record_table(const CopyRecord& r)
{
    return toml::table{
        {"dataset", r.ready.dataset},
        {"tier", r.ready.tier},
        {"source", r.ready.source},
        {"path", r.ready.path},
        {"bytes", signed_of(r.ready.bytes)},
        {"files", signed_of(r.ready.files)},
        {"identity", r.identity},
        {"mode", r.mode},
        {"entries", signed_of(r.entries)},
        {"made", r.made},
        {"made_by", r.made_by},
        {"uses", signed_of(r.uses)},
        {"last_use", r.last_use},
        {"last_job", r.last_job},
        {"oldest", r.oldest},
        {"repaired", signed_of(r.repaired)},
    };
}

CopyRecord copy_record_of(const toml::table& table, const std::string& name)
{
    CopyRecord r;
    r.ready = ready_marker_of(table, name);
    r.identity = table["identity"].value_or(std::string());
    if (r.identity.empty())
        throw Error("copy record " + name + " has no identity");
    r.mode = table["mode"].value_or(std::string("copy"));
    r.entries = static_cast<std::uint64_t>(number_field(table, "entries", name));
    r.made = number_field(table, "made", name);
    r.made_by = table["made_by"].value_or(std::string());
    r.uses = static_cast<std::uint64_t>(number_field(table, "uses", name));
    r.last_use = number_field(table, "last_use", name);
    r.last_job = table["last_job"].value_or(std::string());
    r.oldest = number_field(table, "oldest", name);
    r.repaired = static_cast<std::uint64_t>(integer_field(table, "repaired").value_or(0));
    return r;
}

std::optional<CopyRecord> read_copy_record(const std::string& path)
{
    const std::optional<SmallFile> file = read_small_file_at(AT_FDCWD, path, path, 1u << 20);
    if (!file)
        return std::nullopt;
    return copy_record_of(parse_record(file->content, path), path);
}

std::string copy_record_path(const Tier& tier, const std::string& dataset, const std::string& user)
{
    return tier.path.expand({"", user, ""}) + "/" + kReadyPrefix + dataset + kRecordSuffix;
}

namespace {
// The user directories below a tier root (for root's listing): the names
// of its subdirectories, without following links.
std::vector<std::string> user_dirs(const std::string& root)
{
    std::vector<std::string> names;
    Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid())
        return names;
    DirStream stream(dir.get());
    if (!stream.valid())
        return names;
    while (const dirent* e = stream.next())
        if (struct stat st {}; ::fstatat(dir.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            names.emplace_back(e->d_name);
    std::sort(names.begin(), names.end());
    return names;
}
}  // namespace

std::vector<FoundCopy> find_copies(const Config& config, const std::string& dataset, const std::string& user,
                                   bool all_users)
{
    std::vector<FoundCopy> found;
    for (const auto& [name, tier] : config.tiers) {
        if (tier.scope != Scope::Shared || tier.cleanup != Cleanup::Keep)
            continue;
        const std::vector<std::string> users = all_users ? user_dirs(tier.path.root()) : std::vector{user};
        for (const std::string& who : users) {
            FoundCopy copy{name, who, copy_record_path(tier, dataset, who), std::nullopt, ""};
            try {
                copy.record = read_copy_record(copy.record_path);
            } catch (const Error& e) {
                copy.problem = e.what();
            }
            if (copy.record || !copy.problem.empty())
                found.push_back(std::move(copy));
        }
    }
    return found;
}

}  // namespace dlstage
