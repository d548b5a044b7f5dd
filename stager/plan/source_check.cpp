#include "stager/plan/source_check.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "stager/copies/copy_check.hpp"
#include "stager/transfer/source_reader.hpp"

namespace dlstage::stager {

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
