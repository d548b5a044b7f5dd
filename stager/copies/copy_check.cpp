#include "stager/copies/copy_check.hpp"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <utility>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/write_all.hpp"
#include "policies/purge.hpp"

namespace dlstage::stager {

void write_contents(int dir_fd, const std::string& shown, const std::string& name, const Plan& contents)
{
    write_contents(dir_fd, shown, name, serialize(contents));
}

void write_contents(int dir_fd, const std::string& shown, const std::string& name, const std::string& serialized)
{
    replace_file_at(dir_fd, shown, name, serialized, 0600);
}

std::optional<std::string> read_contents_file(const std::string& path)
{
    // A plan of 1.28 M entries is some 100 MB.
    // Only what this user's job wrote says what the copy must hold (and is
    // loaded: up to 2 GiB on every rank).
    std::optional<SmallFile> file = read_small_file_at(AT_FDCWD, path, path, std::size_t(1) << 31, ::geteuid());
    if (!file)
        return std::nullopt;
    return std::move(file->content);
}

namespace {
bool same_type(EntryType type, mode_t mode)
{
    switch (type) {
    case EntryType::File: return S_ISREG(mode);
    case EntryType::Dir: return S_ISDIR(mode);
    case EntryType::Symlink: return S_ISLNK(mode);
    }
    return false;
}
}  // namespace

std::int64_t ctime_ns(const struct stat& st)
{
    return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

CopyCheck check_copy(int copy_fd, const Plan& contents, const CheckShare& share)
{
    CopyCheck result;
    std::mutex mutex;
    const struct timespec refresh[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    for_share_in_blocks(
        contents.entries.size(), share.rank, share.ranks, share.threads,
        [&](std::size_t from, std::size_t to, std::size_t step) {
            CopyCheck part;
            for (std::size_t i = from; i < to; i += step) {
                const Entry& e = contents.entries[i];
                struct stat st {};
                bool missing = false, wrong = false, foreign = false, changed = false;
                if (::fstatat(copy_fd, e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    if (errno != ENOENT && errno != ENOTDIR)
                        throw_cannot("check", e.path, errno);
                    missing = true;
                } else if (!same_type(e.type, st.st_mode)) {
                    missing = true;
                } else if (st.st_uid != share.owner) {
                    foreign = missing = true;  // someone else's: not what the job staged
                } else if (e.type == EntryType::File && static_cast<std::uint64_t>(st.st_size) != e.size) {
                    wrong = true;
                } else if (share.sealed_ns > 0 && ctime_ns(st) > share.sealed_ns) {
                    wrong = changed = true;
                } else if (share.compare_mtime && e.type == EntryType::File && st.st_mtim.tv_sec != e.mtime_sec) {
                    wrong = changed = true;  // written to in place, whatever its size
                } else if (share.known_changed && (*share.known_changed)[i]) {
                    wrong = changed = true;  // the source changed it since the copy
                }
                if (!missing && !wrong && e.type == EntryType::File && share.refresh_atime)
                    ::utimensat(copy_fd, e.path.c_str(), refresh, AT_SYMLINK_NOFOLLOW);
                ++part.checked;
                if (missing || wrong) {
                    part.bad.push_back(i);
                    ++(missing ? part.missing : part.wrong_size);
                    part.foreign += foreign ? 1 : 0;
                    part.changed += changed ? 1 : 0;
                } else if (e.type == EntryType::File) {
                    const policy::FileTimes times{st.st_atim.tv_sec, st.st_mtim.tv_sec, st.st_ctim.tv_sec};
                    part.oldest = std::min(part.oldest, policy::purge_clock(share.purge_by, times));
                }
            }
            std::lock_guard<std::mutex> lock(mutex);
            result.checked += part.checked;
            result.missing += part.missing;
            result.wrong_size += part.wrong_size;
            result.foreign += part.foreign;
            result.changed += part.changed;
            result.bad.insert(result.bad.end(), part.bad.begin(), part.bad.end());
            result.oldest = std::min(result.oldest, part.oldest);
        });
    std::sort(result.bad.begin(), result.bad.end());
    return result;
}

namespace {
// The parent directory of a contents path ("" for the top one) and its name.
std::pair<std::string_view, std::string_view> split_last(std::string_view path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string_view::npos)
        return {std::string_view(), path};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

// The names one directory of the copy holds that `known` (sorted) lacks.
void unknown_names(int copy_fd, std::string_view dir, const std::vector<std::string_view>& known,
                   std::vector<std::string>& out)
{
    const std::string path = dir.empty() ? std::string(".") : std::string(dir);
    const int fd = ::openat(copy_fd, path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;  // gone or not a directory: check_copy says so
    DIR* stream = ::fdopendir(fd);
    if (!stream) {
        ::close(fd);
        return;
    }
    while (const dirent* d = ::readdir(stream)) {
        const std::string_view name(d->d_name);
        if (name == "." || name == ".." || std::binary_search(known.begin(), known.end(), name))
            continue;
        out.push_back(dir.empty() ? std::string(name) : std::string(dir) + "/" + std::string(name));
    }
    ::closedir(stream);
}
}  // namespace

std::vector<std::string> find_added(int copy_fd, const Plan& contents, int rank, int ranks, unsigned threads)
{
    // Directory k: 0 the top one, then contents' directories in order.
    std::unordered_map<std::string_view, std::size_t> number{{std::string_view(), 0}};
    std::vector<std::string_view> dirs{std::string_view()};
    for (std::size_t i = 0; i < contents.entries.size(); ++i)
        if (contents.entries.type(i) == EntryType::Dir) {
            number.emplace(contents.entries.path(i), dirs.size());
            dirs.push_back(contents.entries.path(i));
        }
    const std::size_t step = static_cast<std::size_t>(std::max(1, ranks));
    const std::size_t mine = static_cast<std::size_t>(std::max(0, rank));
    // What contents says each of this share's directories holds.
    std::vector<std::vector<std::string_view>> known(dirs.size());
    for (std::size_t i = 0; i < contents.entries.size(); ++i) {
        const auto [parent, name] = split_last(contents.entries.path(i));
        const auto at = number.find(parent);
        if (at != number.end() && at->second % step == mine)
            known[at->second].push_back(name);
    }
    std::vector<std::string> added;
    std::mutex mutex;
    for_each_index((dirs.size() + step - 1 - std::min(mine, dirs.size())) / step, std::max(1u, threads),
                   [&](std::size_t k) {
                       const std::size_t d = mine + k * step;
                       if (d >= dirs.size())
                           return;
                       std::sort(known[d].begin(), known[d].end());
                       std::vector<std::string> found;
                       unknown_names(copy_fd, dirs[d], known[d], found);
                       std::lock_guard<std::mutex> lock(mutex);
                       added.insert(added.end(), found.begin(), found.end());
                   });
    std::sort(added.begin(), added.end());
    return added;
}

void fetch_again(const Plan& plan, std::size_t entry, int copy_fd, const std::string& shown, bool keep_times)
{
    const Entry& e = plan.entries[entry];
    const std::string source = plan.source_root + "/" + e.path;
    Fd in(::open(source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!in.valid())
        throw_cannot("read", shown_path(source), errno);
    struct stat st {};
    if (::fstat(in.get(), &st) != 0)
        throw_cannot("read", shown_path(source), errno);
    if (static_cast<std::uint64_t>(st.st_size) != e.size || st.st_mtim.tv_sec != e.mtime_sec)
        throw Error(shown_path(source) + " changed while the copy was checked: run the job again");
    const std::string temporary = e.path + ".dlstage-fetch";
    const std::string dest = shown + "/" + e.path;
    ::unlinkat(copy_fd, temporary.c_str(), 0);
    Fd out(::openat(copy_fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out.valid())
        throw_cannot("create", dest, errno);
    std::vector<char> buffer(1u << 20);
    std::uint64_t copied = 0;
    for (;;) {
        const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("read", shown_path(source), errno);
        if (n == 0)
            break;
        if (!write_all(out.get(), std::string_view(buffer.data(), static_cast<std::size_t>(n))))
            throw_cannot("write", dest, errno);
        copied += static_cast<std::uint64_t>(n);
    }
    if (copied != e.size)
        throw Error(shown_path(source) + " changed while it was read: run the job again");
    const struct timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)},
                                      {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    if (::fchmod(out.get(), e.mode & 0777) != 0 || (keep_times && ::futimens(out.get(), times) != 0))
        throw_cannot("set mode and time of", dest, errno);
    if (const int err = out.close())
        throw_cannot("close", dest, err);
    if (::renameat(copy_fd, temporary.c_str(), copy_fd, e.path.c_str()) != 0)
        throw_cannot("rename into place", dest, errno);
}

PlanChanges changes_between(const Plan& then, const Plan& now)
{
    const EntryList& was = then.entries;
    const EntryList& is = now.entries;
    std::unordered_map<std::string_view, std::size_t> before;  // views into then's arena
    before.reserve(was.size());
    for (std::size_t i = 0; i < was.size(); ++i)
        before.emplace(was.path(i), i);
    PlanChanges changes;
    changes.changed.assign(is.size(), 0);
    changes.known.assign(is.size(), 0);
    for (std::size_t i = 0; i < is.size(); ++i) {
        const auto found = before.find(is.path(i));
        if (found == before.end())
            continue;  // new: missing from the copy, fetched as such
        changes.known[i] = 1;
        const std::size_t w = found->second;
        const EntryList::Record& a = was.record(w);
        const EntryList::Record& b = is.record(i);
        const EntryType type = is.type(i);
        if (was.type(w) != type || (type == EntryType::Dir && a.mode != b.mode)) {
            ++changes.kind_changes;
            continue;
        }
        const bool file_changed = type == EntryType::File && (a.size != b.size || a.mtime_sec != b.mtime_sec ||
                                                              a.mtime_nsec != b.mtime_nsec || a.mode != b.mode);
        const bool link_changed = type == EntryType::Symlink && was.target(w) != is.target(i);
        if (file_changed || link_changed)
            changes.changed[i] = 1;
    }
    return changes;
}

}  // namespace dlstage::stager
