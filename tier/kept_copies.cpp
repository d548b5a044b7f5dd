#include "tier/kept_copies.hpp"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage {

namespace {
// The directories below a tier root (for root's listing), or why the root
// cannot be listed.  Reached as root code reaches any tier: the root must be
// root's and writable by root only (a squatted root holds whatever its
// owner planted), and only its entries' names are read here: each user's
// directory is then looked into on its own (look_into_dir).
std::vector<std::string> user_dirs(const std::string& root, std::string& problem)
{
    std::vector<std::string> names;
    QuickStat f;
    if (!quick_stat(AT_FDCWD, root.c_str(), AT_SYMLINK_NOFOLLOW, f))
        return names;  // no tier root: nobody has a copy here
    OpenResult opened = open_trusted_dir(root, root, false);
    if (!opened.problem.empty()) {
        problem = opened.problem;
        return names;
    }
    const Fd dir = reopen_for_reading(opened.dir);
    DirStream stream(dir.get());
    if (!dir.valid() || !stream.valid()) {
        problem = cannot("list", shown_path(root), errno);
        return names;
    }
    while (const dirent* e = stream.next())
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
            names.emplace_back(e->d_name);
    std::sort(names.begin(), names.end());
    return names;
}

// The record in a user's directory, read without following a symlink,
// entering a mount (on the directory or on the record), leaving the tier or
// blocking on a fifo; it must belong to the directory's owner (who else
// could have put it there is not the copy's user).  Nothing when there is
// no directory or no record.
std::optional<CopyRecord> read_record_within(const Tier& tier, const std::string& dataset, const std::string& user,
                                             const std::string& shown)
{
    const std::string dir = tier.path.expand({"", user, ""});
    const OpenResult opened = look_into_dir(tier.path.root(), dir);
    if (!opened.problem.empty())
        throw Error(opened.problem);
    if (!opened.dir.valid())
        return std::nullopt;
    struct stat owner {};
    if (::fstat(opened.dir.get(), &owner) != 0)
        throw_cannot("examine", shown_path(dir), errno);
    const std::string name = std::string(kReadyPrefix) + dataset + kRecordSuffix;
    const std::optional<SmallFile> file = read_small_file_in(opened.dir.get(), name, shown, 1u << 20);
    if (!file)
        return std::nullopt;
    if (file->st.st_uid != owner.st_uid)
        throw Error(shown + " belongs to uid " + std::to_string(file->st.st_uid) + ", not to the directory's owner");
    return copy_record_of(parse_record(file->content, shown), shown);
}
}  // namespace

std::vector<FoundCopy> find_copies(const Config& config, const std::string& dataset, const std::string& user,
                                   bool all_users)
{
    std::vector<FoundCopy> found;
    for (const auto& [name, tier] : config.tiers) {
        if (!tier.shared() || !tier.keeps_copies())
            continue;
        std::string problem;
        const std::vector<std::string> users = all_users ? user_dirs(tier.path.root(), problem) : std::vector{user};
        if (!problem.empty())
            found.push_back(FoundCopy{name, "-", tier.path.root(), std::nullopt, problem});
        for (const std::string& who : users) {
            FoundCopy copy{name, who, copy_record_path(tier, dataset, who), std::nullopt, ""};
            try {
                copy.record = read_record_within(tier, dataset, who, copy.record_path);
            } catch (const Error& e) {
                copy.problem = e.what();
            }
            if (copy.record || !copy.problem.empty())
                found.push_back(std::move(copy));
        }
    }
    return found;
}

}  // namespace dlstage
