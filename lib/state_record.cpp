#include "lib/state_record.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/read_all.hpp"

namespace dlstage {

namespace {
[[noreturn]] void fail(const std::string& what, const std::string& path, int err)
{
    throw Error("cannot " + what + " " + path + ": " + std::strerror(err));
}

void write_all(int fd, const std::string& data, const std::string& path)
{
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail("write", path, errno);
        done += static_cast<std::size_t>(n);
    }
}
}  // namespace

std::string job_state_dir(const std::string& state_dir, const std::string& job_id)
{
    return state_dir + "/jobs/" + job_id;
}

std::string node_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node,
                             const std::string& event)
{
    return job_state_dir(state_dir, job_id) + "/" + node + "." + event + ".toml";
}

std::string job_user_dir(const std::string& state_dir, const std::string& job_id)
{
    return job_state_dir(state_dir, job_id) + "/user";
}

namespace {
const char* prefix_of(UserRecord kind)
{
    return kind == UserRecord::Progress ? "progress-" : "failure-";
}
}  // namespace

std::string progress_record_path(const std::string& state_dir, const std::string& job_id, const std::string& dataset)
{
    return job_user_dir(state_dir, job_id) + "/" + prefix_of(UserRecord::Progress) + dataset + ".toml";
}

std::string failure_record_path(const std::string& state_dir, const std::string& job_id, const std::string& node)
{
    return job_user_dir(state_dir, job_id) + "/" + prefix_of(UserRecord::Failure) + node + ".toml";
}

std::vector<std::string> user_record_paths(const std::string& state_dir, const std::string& job_id, UserRecord kind)
{
    std::vector<std::string> paths;
    const std::string dir = job_user_dir(state_dir, job_id);
    DIR* d = opendir(dir.c_str());
    if (!d)
        return paths;
    while (const dirent* e = readdir(d))
        if (starts_with(e->d_name, prefix_of(kind)) && ends_with(e->d_name, ".toml"))
            paths.push_back(dir + "/" + e->d_name);
    closedir(d);
    std::sort(paths.begin(), paths.end());
    return paths;
}

std::string prolog_outcome_name(const std::string& node)
{
    return "prolog-" + node + ".toml";
}

void write_record_at(int dir_fd, const std::string& shown, const std::string& name, const toml::table& record,
                     mode_t mode)
{
    std::ostringstream text;
    text << record << "\n";
    // A name nobody can guess in advance, created exclusively: a symlink or
    // a hard link a user prepared under it is never written through.
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".tmp.%d.%lx", static_cast<int>(getpid()),
                  static_cast<unsigned long>(std::random_device{}()));
    const std::string tmp = "." + name + suffix;
    const Fd fd(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid())
        fail("create", shown + "/" + tmp, errno);
    try {
        if (::fchmod(fd.get(), mode) != 0)  // the umask must not loosen or tighten it
            fail("set the mode of", shown + "/" + tmp, errno);
        write_all(fd.get(), text.str(), shown + "/" + tmp);
        if (fsync(fd.get()) != 0)
            fail("sync", shown + "/" + tmp, errno);
        if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0)
            fail("replace", shown + "/" + name, errno);
    } catch (...) {
        ::unlinkat(dir_fd, tmp.c_str(), 0);
        throw;
    }
}

void write_record(const std::string& path, const toml::table& record)
{
    const std::size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        fail("open the directory of", path, errno);
    write_record_at(fd.get(), dir, slash == std::string::npos ? path : path.substr(slash + 1), record, 0644);
}

toml::table parse_record(std::string_view text, const std::string& name)
{
    try {
        return toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        throw Error("cannot read state record " + name + ": " + printable(e.description()));
    }
}

toml::table read_record(const std::string& path)
{
    const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid())
        fail("read state record", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        fail("read state record", path, errno);
    if (!S_ISREG(st.st_mode))
        throw Error("state record " + path + " is not a regular file");
    if (static_cast<std::uint64_t>(st.st_size) > kMaxRecordBytes)
        throw Error("state record " + path + " is larger than " + std::to_string(kMaxRecordBytes) + " bytes");
    const std::string text = read_all(fd.get(), kMaxRecordBytes, "state record " + path);
    return parse_record(text, path);
}

}  // namespace dlstage
