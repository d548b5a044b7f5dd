#include "stager/plan.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/dataset_format.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

std::uint64_t Plan::total_bytes() const
{
    std::uint64_t sum = 0;
    for (const Entry& e : entries)
        sum += e.type == EntryType::File ? e.size : 0;
    return sum;
}

std::uint64_t Plan::file_count() const
{
    return static_cast<std::uint64_t>(std::count_if(
        entries.begin(), entries.end(), [](const Entry& e) { return e.type != EntryType::Dir; }));
}

namespace {
[[noreturn]] void fail(const std::string& path, int err)
{
    throw_cannot("read", path, err);
}

Entry entry_from_stat(const std::string& rel, const struct stat& st)
{
    Entry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) {
        e.type = EntryType::File;
        e.size = static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISDIR(st.st_mode)) {
        e.type = EntryType::Dir;
    } else if (S_ISLNK(st.st_mode)) {
        e.type = EntryType::Symlink;
    }
    return e;
}

std::string read_link_at(int dir_fd, const std::string& name, const std::string& path)
{
    std::string target(4096, '\0');
    const ssize_t n = readlinkat(dir_fd, name.c_str(), target.data(), target.size());
    if (n < 0)
        fail(path, errno);
    target.resize(static_cast<std::size_t>(n));
    return target;
}

// One directory: its entries (not recursing), and the subdirectories found.
// Everything is asked relative to the directory's descriptor: on a
// parallel file system each path component of a full path can cost a
// metadata round trip, so one lookup per entry is the least there is.
void list_directory(const std::string& root, const std::string& rel, std::vector<Entry>& entries,
                    std::vector<std::string>& subdirs)
{
    const std::string dir_path = rel.empty() ? root : root + "/" + rel;
    const int dir_fd = ::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0)
        fail(dir_path, errno);
    DIR* dir = fdopendir(dup(dir_fd));
    if (!dir) {
        const int err = errno;
        ::close(dir_fd);
        fail(dir_path, err);
    }
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* d = readdir(dir)) {
        if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
            names.emplace_back(d->d_name);
    }
    int err = errno;
    closedir(dir);
    if (err) {
        ::close(dir_fd);
        fail(dir_path, err);
    }
    try {
        for (const std::string& name : names) {
            const std::string child_rel = rel.empty() ? name : rel + "/" + name;
            const std::string child_path = root + "/" + child_rel;
            struct stat st {};
            if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                fail(child_path, errno);
            if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
                throw Error(quoted(child_path) + " is not a file, directory or symlink; datasets cannot hold "
                            "devices, fifos or sockets");
            Entry e = entry_from_stat(child_rel, st);
            if (e.type == EntryType::Symlink)
                e.target = read_link_at(dir_fd, name, child_path);
            if (e.type == EntryType::File && faccessat(dir_fd, name.c_str(), R_OK, 0) != 0)
                fail(child_path, errno);
            if (e.type == EntryType::Dir)
                subdirs.push_back(child_rel);
            entries.push_back(std::move(e));
        }
    } catch (...) {
        ::close(dir_fd);
        throw;
    }
    ::close(dir_fd);
}

// The walk is the one metadata-heavy pass over the parallel file system
// (one lstat per entry): several threads work on different directories at
// once, as a file system's metadata servers serve many requests in
// parallel.  Paths sorted bytewise afterwards give every rank and every run
// the same order, with each directory before its contents.
void walk(const std::string& root, Plan& plan, unsigned threads)
{
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::string> pending{""};
    unsigned busy = 0;
    std::exception_ptr error;
    const auto work = [&] {
        std::vector<Entry> entries;
        std::vector<std::string> subdirs;
        for (;;) {
            std::string rel;
            {
                std::unique_lock<std::mutex> lock(mutex);
                changed.wait(lock, [&] { return !pending.empty() || busy == 0 || error; });
                if (pending.empty() || error)
                    return;
                rel = std::move(pending.front());
                pending.pop_front();
                ++busy;
            }
            entries.clear();
            subdirs.clear();
            std::exception_ptr failed;
            try {
                list_directory(root, rel, entries, subdirs);
            } catch (...) {
                failed = std::current_exception();
            }
            {
                std::lock_guard<std::mutex> lock(mutex);
                if (failed && !error)
                    error = failed;
                for (Entry& e : entries)
                    plan.entries.push_back(std::move(e));
                for (std::string& d : subdirs)
                    pending.push_back(std::move(d));
                --busy;
            }
            changed.notify_all();
        }
    };
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < std::max(1u, threads); ++i)
        pool.emplace_back(work);
    for (auto& t : pool)
        t.join();
    if (error)
        std::rethrow_exception(error);
    std::sort(plan.entries.begin(), plan.entries.end(),
              [](const Entry& a, const Entry& b) { return a.path < b.path; });
}

std::string base_name(const std::string& path)
{
    return path.substr(path.rfind('/') + 1);
}

void add_single_file(const std::string& path, Plan& plan)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        fail(path, errno);
    if (!S_ISREG(st.st_mode))
        throw Error(quoted(path) + " is not a regular file");
    if (access(path.c_str(), R_OK) != 0)
        fail(path, errno);
    plan.entries.push_back(entry_from_stat(base_name(path), st));
}

// Tar shards: the glob's matches, sorted; each staged under its base name.
Plan plan_shards(const Dataset& dataset)
{
    Plan plan;
    plan.format = Format::Tar;
    const std::string& pattern = dataset.source;
    plan.source_root = pattern.substr(0, pattern.rfind('/'));
    glob_t matches{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    std::vector<std::string> paths(matches.gl_pathv, matches.gl_pathv + (rc == 0 ? matches.gl_pathc : 0));
    globfree(&matches);
    if (rc == GLOB_NOMATCH)
        throw Error("no tar shards match " + quoted(pattern));
    if (rc != 0)
        fail(pattern, errno ? errno : EIO);
    std::sort(paths.begin(), paths.end());
    for (const std::string& path : paths) {
        if (path.substr(0, path.rfind('/')) != plan.source_root)
            throw Error("tar shards must sit in one directory: " + quoted(pattern));
        add_single_file(path, plan);
    }
    return plan;
}
}  // namespace

Plan build_plan(const Dataset& dataset, unsigned walk_threads)
{
    const Format known = dataset.known_format();
    if (known == Format::Tar && is_glob(dataset.source))
        return plan_shards(dataset);

    struct stat st {};
    if (stat(dataset.source.c_str(), &st) != 0)
        fail(dataset.source, errno);
    Plan plan;
    if (S_ISDIR(st.st_mode)) {
        if (known != Format::Auto && known != Format::Dir)
            throw Error(quoted(dataset.source) + " is a directory, but the dataset's format is " +
                        to_string(known));
        plan.format = Format::Dir;
        plan.source_root = dataset.source;
        walk(dataset.source, plan, walk_threads);
        return plan;
    }
    plan.format = known == Format::Auto ? Format::File : known;
    plan.source_root = dataset.source.substr(0, dataset.source.rfind('/'));
    if (plan.source_root.empty())
        plan.source_root = "/";
    plan.single_file = true;
    add_single_file(dataset.source, plan);
    return plan;
}

// --- wire format -------------------------------------------------------------
// Little more than the fields in order; both ends are the same binary.

namespace {
class Writer {
public:
    template <typename T>
    void put(T value)
    {
        out_.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
    void put(const std::string& text)
    {
        put(static_cast<std::uint32_t>(text.size()));
        out_ += text;
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class Reader {
public:
    explicit Reader(const std::string& in) : in_(in) {}
    template <typename T>
    T get()
    {
        T value;
        need(sizeof value);
        std::memcpy(&value, in_.data() + pos_, sizeof value);
        pos_ += sizeof value;
        return value;
    }
    std::string get_string()
    {
        const auto size = get<std::uint32_t>();
        need(size);
        std::string text = in_.substr(pos_, size);
        pos_ += size;
        return text;
    }
    bool done() const { return pos_ == in_.size(); }

private:
    void need(std::size_t n) const
    {
        if (in_.size() - pos_ < n)
            throw Error("malformed staging plan (truncated)");
    }
    const std::string& in_;
    std::size_t pos_ = 0;
};

constexpr std::uint32_t kPlanMagic = 0x444c5331;  // "DLS1"
}  // namespace

std::string serialize(const Plan& plan)
{
    Writer w;
    w.put(kPlanMagic);
    w.put(plan.source_root);
    w.put(static_cast<std::uint8_t>(plan.format));
    w.put(static_cast<std::uint8_t>(plan.single_file));
    w.put(static_cast<std::uint64_t>(plan.entries.size()));
    for (const Entry& e : plan.entries) {
        w.put(static_cast<std::uint8_t>(e.type));
        w.put(e.path);
        w.put(e.mode);
        w.put(e.mtime_sec);
        w.put(e.mtime_nsec);
        w.put(e.size);
        w.put(e.target);
    }
    return w.take();
}

Plan deserialize(const std::string& bytes)
{
    Reader r(bytes);
    if (r.get<std::uint32_t>() != kPlanMagic)
        throw Error("malformed staging plan (bad magic)");
    Plan plan;
    plan.source_root = r.get_string();
    plan.format = static_cast<Format>(r.get<std::uint8_t>());
    plan.single_file = r.get<std::uint8_t>() != 0;
    const auto count = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < count; ++i) {
        Entry e;
        e.type = static_cast<EntryType>(r.get<std::uint8_t>());
        e.path = r.get_string();
        e.mode = r.get<std::uint32_t>();
        e.mtime_sec = r.get<std::int64_t>();
        e.mtime_nsec = r.get<std::uint32_t>();
        e.size = r.get<std::uint64_t>();
        e.target = r.get_string();
        plan.entries.push_back(std::move(e));
    }
    if (!r.done())
        throw Error("malformed staging plan (trailing bytes)");
    return plan;
}

}  // namespace dlstage::stager
