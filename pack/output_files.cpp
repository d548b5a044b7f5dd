#include "pack/output_files.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include "facts/dataset_format.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "pack/tar_shards.hpp"

namespace dlstage::pack {

std::vector<std::string> sorted_names(const std::string& dir_path)
{
    const Fd dir(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DirStream stream(dir.get());
    if (!stream.valid())
        throw_cannot("read", shown_path(dir_path), errno);
    std::vector<std::string> names;
    while (const dirent* d = stream.next())
        names.emplace_back(d->d_name);
    if (stream.error() != 0)
        throw_cannot("read", shown_path(dir_path), stream.error());
    std::sort(names.begin(), names.end());
    return names;
}

namespace {
std::string real_path(const std::string& path)
{
    std::unique_ptr<char, decltype(&std::free)> resolved(realpath(path.c_str(), nullptr), &std::free);
    if (!resolved)
        throw_cannot("resolve", shown_path(path), errno);
    return resolved.get();
}
}  // namespace

void check_input_dir(const std::string& dir)
{
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
        throw_cannot("read", shown_path(dir), errno);
    if (!S_ISDIR(st.st_mode))
        throw Error(quoted(dir) + " is not a directory");
}

void check_output_place(const std::string& dir, const std::string& out)
{
    const std::string out_dir = split_parent(out).first;
    struct stat st {};
    if (stat(out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error("cannot write " + quoted(out) + ": directory " + quoted(out_dir) + " does not exist");
    const std::string real_dir = real_path(dir);
    const std::string real_out_dir = real_path(out_dir);
    if (real_out_dir == real_dir || starts_with(real_out_dir, real_dir == "/" ? "/" : real_dir + "/"))
        throw Error("OUT " + quoted(out) + " is inside DIR " + quoted(dir) + "; write it elsewhere");
}

PackFormat pack_format(const std::string& asked, const std::string& out)
{
    if (!asked.empty())
        return asked == "squashfs" ? PackFormat::Squashfs : PackFormat::Tar;
    return format_from_name(out) == Format::Squashfs ? PackFormat::Squashfs : PackFormat::Tar;
}

std::vector<std::string> check_existing_output(PackFormat format, const std::string& out, bool force)
{
    if (format == PackFormat::Squashfs) {
        struct stat st {};
        if (lstat(out.c_str(), &st) == 0 && !force)
            throw Error(out + " exists; use --force to replace it");
        return {};
    }
    std::vector<std::string> old_shards = existing_shards(out);
    if (!old_shards.empty() && !force)
        throw Error(old_shards.front() + " exists; use --force to replace it");
    return old_shards;
}

std::string temporary_name(const std::string& path)
{
    return path + ".tmp." + std::to_string(getpid());
}

std::uint64_t file_size(const std::string& path)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        throw_cannot("read", shown_path(path), errno);
    return static_cast<std::uint64_t>(st.st_size);
}

void rename_into_place(const std::string& from, const std::string& to)
{
    if (std::rename(from.c_str(), to.c_str()) != 0)
        throw_cannot("create", shown_path(to), errno);
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
