#include "lib/state_record.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
[[noreturn]] void fail(const std::string& what, const std::string& path, int err)
{
    throw Error("cannot " + what + " " + path + ": " + std::strerror(err));
}

void make_parents(const std::string& path)
{
    for (std::size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
        const std::string dir = path.substr(0, pos);
        if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
            fail("create directory", dir, errno);
    }
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

void write_record(const std::string& path, const toml::table& record)
{
    make_parents(path);
    std::ostringstream text;
    text << record << "\n";
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("create", tmp, errno);
    try {
        write_all(fd, text.str(), tmp);
        if (fsync(fd) != 0)
            fail("sync", tmp, errno);
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    ::close(fd);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail("replace", path, err);
    }
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
    std::ifstream in(path, std::ios::binary);  // as toml::parse_file opened it
    std::ostringstream text;
    if (in)
        text << in.rdbuf();
    if (!in || in.bad())
        throw Error("cannot read state record " + path + ": " + std::strerror(errno));
    return parse_record(text.str(), path);
}

}  // namespace dlstage
