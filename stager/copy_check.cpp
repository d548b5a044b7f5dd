#include "stager/copy_check.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

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

std::string source_identity(const Plan& plan)
{
    return source_identity_of(serialize(plan));
}

std::string source_identity_of(const std::string& bytes)
{
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
    return hex;
}

void write_contents(int dir_fd, const std::string& shown, const std::string& name, const Plan& contents)
{
    replace_file_at(dir_fd, shown, name, serialize(contents), 0600);
}

std::optional<std::string> read_contents_file(const std::string& path)
{
    // A plan of 1.28 M entries is some 100 MB.
    // Only what this user's job wrote says what the copy must hold (and is
    // loaded: up to 2 GiB on every rank).
    std::optional<SmallFile> file =
        read_small_file_at(AT_FDCWD, path, path, std::size_t(1) << 31, ::geteuid());
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
    // This share: entries i with i % ranks == rank, in blocks of kBlock of
    // them; a thread takes the next block, checks it alone and adds what it
    // found to the result once (one lock per block, not per entry: at
    // 1.28 M entries and 16 threads, a lock per stat was a queue).
    constexpr std::size_t kBlock = 512;
    const std::size_t ranks = static_cast<std::size_t>(std::max(1, share.ranks));
    const std::size_t first = static_cast<std::size_t>(std::max(0, share.rank));
    const std::size_t total = contents.entries.size();
    const std::size_t count = first < total ? (total - first + ranks - 1) / ranks : 0;
    CopyCheck result;
    std::mutex mutex;
    const struct timespec refresh[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    for_each_index((count + kBlock - 1) / kBlock, std::max(1u, share.threads), [&](std::size_t block) {
        CopyCheck part;
        const std::size_t end = std::min(count, (block + 1) * kBlock);
        for (std::size_t k = block * kBlock; k < end; ++k) {
            const std::size_t i = first + k * ranks;
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

}  // namespace dlstage::stager
