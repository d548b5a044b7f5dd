#include "pack/output_files.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::pack {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err)
{
    throw_cannot(what, quoted(path), err);
}

std::string dir_of(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path)
{
    return path.substr(path.rfind('/') + 1);
}

std::vector<std::string> sorted_names(const std::string& dir_path)
{
    DIR* dir = opendir(dir_path.c_str());
    if (!dir)
        fail("read", dir_path, errno);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* d = readdir(dir)) {
        if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
            names.emplace_back(d->d_name);
    }
    const int err = errno;
    closedir(dir);
    if (err)
        fail("read", dir_path, err);
    std::sort(names.begin(), names.end());
    return names;
}

namespace {
std::string real_path(const std::string& path)
{
    std::unique_ptr<char, decltype(&std::free)> resolved(realpath(path.c_str(), nullptr), &std::free);
    if (!resolved)
        fail("resolve", path, errno);
    return resolved.get();
}
}  // namespace

void check_input_dir(const std::string& dir)
{
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
        fail("read", dir, errno);
    if (!S_ISDIR(st.st_mode))
        throw Error(quoted(dir) + " is not a directory");
}

void check_output_place(const std::string& dir, const std::string& out)
{
    const std::string out_dir = dir_of(out);
    struct stat st {};
    if (stat(out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error("cannot write " + quoted(out) + ": directory " + quoted(out_dir) + " does not exist");
    const std::string real_dir = real_path(dir);
    const std::string real_out_dir = real_path(out_dir);
    if (real_out_dir == real_dir || starts_with(real_out_dir, real_dir == "/" ? "/" : real_dir + "/"))
        throw Error("OUT " + quoted(out) + " is inside DIR " + quoted(dir) + "; write it elsewhere");
}

std::string temporary_name(const std::string& path)
{
    return path + ".tmp." + std::to_string(getpid());
}

std::uint64_t file_size(const std::string& path)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        fail("read", path, errno);
    return static_cast<std::uint64_t>(st.st_size);
}

void rename_into_place(const std::string& from, const std::string& to)
{
    if (std::rename(from.c_str(), to.c_str()) != 0)
        fail("create", to, errno);
}

// --- temporaries, also on SIGINT/SIGTERM/SIGHUP -----------------------------------

namespace {
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Read by the signal handler: set before the handlers are installed and not
// changed while they are.
const std::vector<std::string>* g_temporaries = nullptr;
volatile pid_t g_child = 0;

extern "C" void remove_temporaries_and_die(int signal_number)
{
    if (g_child > 0)
        kill(g_child, SIGTERM);
    if (g_temporaries)
        for (const std::string& path : *g_temporaries)
            unlink(path.c_str());
    std::signal(signal_number, SIG_DFL);
    raise(signal_number);
}
}  // namespace

void set_child_to_stop(pid_t pid)
{
    g_child = pid;
}

Temporaries::Temporaries(std::vector<std::string> paths) : paths_(std::move(paths))
{
    g_temporaries = &paths_;
    for (int s : kSignals)
        std::signal(s, remove_temporaries_and_die);
}

Temporaries::~Temporaries()
{
    for (int s : kSignals)
        std::signal(s, SIG_DFL);
    g_temporaries = nullptr;
    for (const std::string& path : paths_)
        unlink(path.c_str());  // after the renames: nothing left to remove
}

}  // namespace dlstage::pack
