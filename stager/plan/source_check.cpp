#include "stager/plan/source_check.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"

namespace dlstage::stager {

namespace {
// "2026-11-23 17:33:26.123456789 UTC": the nanoseconds, because a rewrite
// within the same second is a change too.
std::string utc_time(std::int64_t sec, std::uint32_t nsec)
{
    char fraction[16];
    std::snprintf(fraction, sizeof fraction, ".%09u UTC", nsec);
    return time_text(sec, "%Y-%m-%d %H:%M:%S", true) + fraction;
}
}  // namespace

bool as_planned(std::uint64_t size, std::int64_t mtime_sec, std::uint32_t mtime_nsec, const struct stat& st)
{
    return static_cast<std::uint64_t>(st.st_size) == size && st.st_mtim.tv_sec == mtime_sec &&
           static_cast<std::uint32_t>(st.st_mtim.tv_nsec) == mtime_nsec;
}

std::string how_changed(const Entry& entry, const struct stat& st)
{
    if (as_planned(entry.size, entry.mtime_sec, entry.mtime_nsec, st))
        return {};
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size != entry.size)
        return "size " + std::to_string(entry.size) + " -> " + std::to_string(size);
    if (st.st_mtim.tv_sec != entry.mtime_sec || static_cast<std::uint32_t>(st.st_mtim.tv_nsec) != entry.mtime_nsec)
        return "mtime " + utc_time(entry.mtime_sec, entry.mtime_nsec) + " -> " +
               utc_time(st.st_mtim.tv_sec, static_cast<std::uint32_t>(st.st_mtim.tv_nsec));
    return {};
}

std::string changed_since_planned(const std::string& path, const Entry& entry, const struct stat& st)
{
    const std::string how = how_changed(entry, st);
    return how.empty() ? how : changed_message(path, how);
}

std::string changed_message(const std::string& path, const std::string& how)
{
    return shown_path(path) + " changed since it was planned (" + how + "): run again";
}

namespace {
// "" when the source entry at `at` (below root_fd) is as planned, else how
// it differs.
std::string how_differs(int root_fd, const Entry& e)
{
    struct stat st {};
    if (::fstatat(root_fd, e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT || errno == ENOTDIR ? std::string("gone") : std::string(std::strerror(errno));
    if (e.type == EntryType::Symlink) {
        if (!S_ISLNK(st.st_mode))
            return "no longer a symlink";
        std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
        const ssize_t n = ::readlinkat(root_fd, e.path.c_str(), target.data(), target.size());
        if (n < 0 || static_cast<std::string::size_type>(n) != e.target.size() ||
            target.compare(0, e.target.size(), e.target) != 0)
            return "its target changed";
        return {};
    }
    if (!S_ISREG(st.st_mode))
        return "no longer a regular file";
    return how_changed(e, st);
}
}  // namespace

SourceDrift check_source(const Plan& plan, int rank, int ranks, unsigned threads, Checked which)
{
    SourceDrift drift;
    // O_PATH: a root the user may pass through but not list is still checked.
    const Fd root(::open(plan.source_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) {
        drift.changed = 1;
        drift.example = shown_path(plan.source_root) + ": " + std::strerror(errno);
        return drift;
    }
    std::mutex mutex;
    for_share_in_blocks(plan.entries.size(), rank, ranks, threads,
                        [&](std::size_t from, std::size_t to, std::size_t step) {
                            SourceDrift part;
                            for (std::size_t i = from; i < to; i += step) {
                                if (plan.entries.type(i) == EntryType::Dir ||
                                    (which == Checked::EmptyFiles &&
                                     (plan.entries.type(i) != EntryType::File || plan.entries.record(i).size != 0)))
                                    continue;
                                const Entry e = plan.entries[i];
                                ++part.checked;
                                const std::string how = how_differs(root.get(), e);
                                if (how.empty())
                                    continue;
                                if (part.changed++ == 0)
                                    part.example = shown_path(plan.source_root + "/" + e.path) + ": " + how;
                            }
                            std::lock_guard<std::mutex> lock(mutex);
                            drift.checked += part.checked;
                            drift.changed += part.changed;
                            if (drift.example.empty())
                                drift.example = part.example;
                        });
    return drift;
}

}  // namespace dlstage::stager
