#include "job/state_record.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

std::string jobs_dir(const std::string& state_dir)
{
    return state_dir + "/" + kJobsDir;
}

std::string job_state_dir(const std::string& state_dir, const std::string& job_id)
{
    return jobs_dir(state_dir) + "/" + job_id;
}

std::string node_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node,
                             const std::string& event)
{
    return job_state_dir(state_dir, job_id) + "/" + node_record_name(node, event);
}

std::string node_record_name(const std::string& node, const std::string& event)
{
    return node + "." + event + kRecordSuffix;
}

std::string job_user_dir(const std::string& state_dir, const std::string& job_id)
{
    return job_state_dir(state_dir, job_id) + "/" + kUserDir;
}

namespace {
const char* prefix_of(UserRecord kind)
{
    switch (kind) {
    case UserRecord::Progress: return kProgressPrefix;
    case UserRecord::Failure: return kFailurePrefix;
    case UserRecord::PrologOutcome: return kPrologOutcomePrefix;
    case UserRecord::EpilogOutcome: return kEpilogOutcomePrefix;
    }
    return kProgressPrefix;
}
}  // namespace

std::string progress_record_path(const std::string& state_dir, const std::string& job_id, const std::string& dataset)
{
    return job_user_dir(state_dir, job_id) + "/" + prefix_of(UserRecord::Progress) + dataset + kRecordSuffix;
}

std::string failure_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node)
{
    return job_user_dir(state_dir, job_id) + "/" + prefix_of(UserRecord::Failure) + node + kRecordSuffix;
}
bool write_failure_record(const std::string& state_dir, const std::string& job_id, const std::string& node,
                          const std::string& message) noexcept
{
    try {
        write_record(failure_record_path(state_dir, job_id, node), toml::table{{"node", node}, {"message", message}});
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

std::string prolog_outcome_name(const std::string& node)
{
    return kPrologOutcomePrefix + node + kRecordSuffix;
}

std::string epilog_outcome_name(const std::string& node)
{
    return kEpilogOutcomePrefix + node + kRecordSuffix;
}

void write_record_at(int dir_fd, const std::string& shown, const std::string& name, const toml::table& record,
                     mode_t mode)
{
    std::ostringstream text;
    text << record << "\n";
    replace_file_at(dir_fd, shown, name, text.str(), mode);
}

void write_record(const std::string& path, const toml::table& record)
{
    const auto [dir, name] = split_parent(path);
    const Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("open the directory of", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw_cannot("examine the directory of", path, errno);
    if (st.st_uid != ::geteuid())
        throw Error("the directory of " + path + " belongs to uid " + std::to_string(st.st_uid) +
                    ", not to you; nothing written");
    write_record_at(fd.get(), dir, name, record, 0644);
}

toml::table parse_record(std::string_view text, const std::string& name)
{
    try {
        return toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        throw Error("cannot read state record " + name + ": " + printable(e.description()));
    }
}

namespace {
// A record opened by name in dir_fd (AT_FDCWD: a path), read whole.
toml::table read_record_at(int dir_fd, const std::string& name, const std::string& shown, uid_t* owner = nullptr)
{
    const Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read state record", shown, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw_cannot("read state record", shown, errno);
    if (!S_ISREG(st.st_mode))
        throw Error("state record " + shown + " is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > kMaxRecordBytes)
        throw Error("state record " + shown + " is larger than " + std::to_string(kMaxRecordBytes) + " bytes");
    if (owner)
        *owner = st.st_uid;
    return parse_record(read_all(fd.get(), kMaxRecordBytes, "state record " + shown), shown);
}

// The job's user dir, open for reading, reached without entering a mount.
Fd open_user_dir(const std::string& state_dir, const std::string& job_id)
{
    const Fd job(::open(job_state_dir(state_dir, job_id).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    const Fd user(job.valid() ? ::openat(job.get(), kUserDir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1);
    QuickStat job_facts, user_facts;
    if (!user.valid() || !quick_stat(job.get(), job_facts) || !quick_stat(user.get(), user_facts) ||
        user_facts.dev != job_facts.dev)
        return Fd();
    // "." of the lookup stays on this file system even if a mount was put
    // on the directory since.
    return Fd(::openat(user.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}
// The names of this kind of record in the open user dir, sorted.
std::vector<std::string> record_names(const Fd& dir, UserRecord kind)
{
    std::vector<std::string> names;
    DirStream entries(dir.get());
    if (!entries.valid())
        return names;
    while (const dirent* e = entries.next())
        if (starts_with(e->d_name, prefix_of(kind)) && ends_with(e->d_name, kRecordSuffix))
            names.emplace_back(e->d_name);
    std::sort(names.begin(), names.end());
    return names;
}
}  // namespace

void write_user_outcome(const std::string& state_dir, const std::string& job_id, const std::string& name,
                        const toml::table& record)
{
    const Fd dir = open_user_dir(state_dir, job_id);
    if (!dir.valid())
        throw Error("no user directory " + job_user_dir(state_dir, job_id) + " (or a mount on it)");
    write_record_at(dir.get(), job_user_dir(state_dir, job_id), name, record, 0644);
}

std::vector<std::string> user_record_paths(const std::string& state_dir, const std::string& job_id, UserRecord kind)
{
    std::vector<std::string> paths;
    for (const std::string& name : record_names(open_user_dir(state_dir, job_id), kind))
        paths.push_back(job_user_dir(state_dir, job_id) + "/" + name);
    return paths;
}

std::vector<UserRecordFile> read_user_records(const std::string& state_dir, const std::string& job_id, UserRecord kind)
{
    std::vector<UserRecordFile> records;
    const Fd dir = open_user_dir(state_dir, job_id);
    const std::string shown = job_user_dir(state_dir, job_id);
    for (const std::string& name : record_names(dir, kind)) {
        UserRecordFile file{name, 0, {}};
        try {
            file.record = read_record_at(dir.get(), name, shown + "/" + name, &file.owner);
            records.push_back(std::move(file));
        } catch (const Error&) {
            // being replaced this very moment, or not a record: skipped
        }
    }
    return records;
}

std::optional<toml::table> read_prolog_outcome(const std::string& state_dir, const std::string& job_id,
                                               const std::string& node)
{
    const std::string name = prolog_outcome_name(node);
    const Fd dir = open_user_dir(state_dir, job_id);
    if (!dir.valid())
        return std::nullopt;
    uid_t owner = 0;
    try {
        toml::table record = read_record_at(dir.get(), name, job_user_dir(state_dir, job_id) + "/" + name, &owner);
        if (owner != 0)
            return std::nullopt;
        return record;
    } catch (const Error&) {
        return std::nullopt;
    }
}

toml::table read_record(const std::string& path)
{
    return read_record_at(AT_FDCWD, path, path);
}

}  // namespace dlstage
