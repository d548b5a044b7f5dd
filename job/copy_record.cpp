#include "job/copy_record.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/record_field.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
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
        {"sealed_ns", r.sealed_ns},
        {"checked_scan", r.checked_scan},
        {"found_changed", r.found_changed},
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
    r.sealed_ns = integer_field(table, "sealed_ns").value_or(0);
    r.checked_scan = integer_field(table, "checked_scan").value_or(0);
    r.found_changed = integer_field(table, "found_changed").value_or(0);
    return r;
}

std::optional<CopyRecord> read_copy_record(const std::string& path)
{
    // The caller's own record (the stager, submit): one someone else put in
    // the caller's directory says nothing about the caller's copy.
    const std::optional<SmallFile> file = read_small_file_at(AT_FDCWD, path, path, 1u << 20, ::geteuid());
    if (!file)
        return std::nullopt;
    return copy_record_of(parse_record(file->content, path), path);
}

toml::table resume_record_table(const ResumeRecord& r)
{
    toml::table table{
        {"identity", r.identity},
        {"mode", r.mode},
        {"began", r.began},
        {"began_by", r.began_by},
        {"attempts", signed_of(r.attempts)},
    };
    if (r.walked)
        table.insert("walked", true);
    return table;
}

std::optional<ResumeRecord> read_resume_record(const std::string& path)
{
    const std::optional<SmallFile> file = read_small_file_at(AT_FDCWD, path, path, 1u << 16, ::geteuid());
    if (!file)
        return std::nullopt;
    const toml::table table = parse_record(file->content, path);
    ResumeRecord r;
    r.identity = table["identity"].value_or(std::string());
    r.mode = table["mode"].value_or(std::string());
    r.walked = table["walked"].value_or(false);
    if ((r.identity.empty() && !r.walked) || r.mode.empty())
        throw Error("resume record " + path + " has no identity or mode");
    r.began = number_field(table, "began", path);
    r.began_by = table["began_by"].value_or(std::string());
    r.attempts = static_cast<std::uint64_t>(number_field(table, "attempts", path));
    return r;
}

std::string reader_mark_text(const ReaderMark& mark)
{
    return mark.copy + "\n" + mark.path + "\n";
}

std::optional<ReaderMark> reader_mark_of(const std::string& text)
{
    const std::vector<std::string> lines = split(text, '\n');
    if (lines.size() < 2 || lines[0].empty() || lines[0].find('/') != std::string::npos || lines[1].empty() ||
        lines[1][0] != '/')
        return std::nullopt;
    return ReaderMark{lines[0], lines[1]};
}

std::optional<ReaderMark> read_reader_mark(const std::string& readers_dir, const std::string& job)
{
    try {
        const std::optional<SmallFile> file =
            read_small_file_at(AT_FDCWD, readers_dir + "/" + job, readers_dir + "/" + job, 8192, ::geteuid());
        return file ? reader_mark_of(file->content) : std::nullopt;
    } catch (const Error&) {
        return std::nullopt;  // a directory in its place, someone else's: no mark of this job
    }
}

std::string copy_record_path(const Tier& tier, const std::string& dataset, const std::string& user)
{
    return tier.path.expand({"", user, ""}) + "/" + kReadyPrefix + dataset + kRecordSuffix;
}

}  // namespace dlstage
