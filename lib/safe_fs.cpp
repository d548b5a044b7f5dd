#include "lib/safe_fs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <set>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "lib/fd.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {

// O_NOFOLLOW|O_DIRECTORY: a symlink or anything but a directory fails to open,
// which is how every component below the tier root is checked.
constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

Fd open_dir_at(int dirfd, const std::string& name)
{
    return Fd(::openat(dirfd, name.c_str(), kDirFlags));
}

// The same check for a directory that is only passed through: O_PATH needs
// search permission only, so the stager, as the user, can walk shared levels
// it cannot read (a 0711 tier root), as it could with a path.
Fd open_passage_at(int dirfd, const std::string& name)
{
    return Fd(::openat(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// "cannot <action> <label>: <reason>".  Callers pass errno straight in with
// a label built beforehand, so nothing can change errno before it is read.
std::string cannot(const char* action, const std::string& label, int err)
{
    return std::string("cannot ") + action + " " + label + ": " + std::strerror(err);
}

// A path as it may appear in a one-line message.  Names below the tier root
// are the user's and may hold newlines, so control bytes are escaped; a
// hostile tree thousands of levels deep is shortened in the middle.
std::string shown(const std::string& path)
{
    constexpr std::size_t kKeep = 200;
    const std::string text =
        path.size() > 2 * kKeep ? path.substr(0, kKeep) + "..." + path.substr(path.size() - kKeep) : path;
    const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
    return plain ? text : quoted(text);
}

// The components of an absolute path, or nothing if it is relative or has an
// empty, "." or ".." component.  Refused rather than normalised: a path that
// needs normalising did not come from a path template.
std::optional<std::vector<std::string>> components(const std::string& path)
{
    if (path.empty() || path[0] != '/')
        return std::nullopt;
    std::vector<std::string> parts = split(std::string_view(path).substr(1), '/');
    for (const std::string& part : parts)
        if (part.empty() || part == "." || part == "..")
            return std::nullopt;
    return parts;
}

std::string path_of(const std::vector<std::string>& parts)
{
    return "/" + join(parts, "/");
}

const char* const kPathRule = "must be an absolute path without empty, '.' or '..' components";

// Why the tier root is unusable as a path, or "" (then root_parts is set).
std::string root_problem(const std::string& root, std::vector<std::string>& root_parts)
{
    std::optional<std::vector<std::string>> parts = components(root);
    if (!parts)
        return "tier root " + shown(root) + " " + kPathRule + " below /";
    root_parts = std::move(*parts);
    return "";
}

// Why dir is not a path strictly below the tier root, or "" (then below is
// set to its components under the root, never empty).
std::string dir_problem(const std::string& root, const std::vector<std::string>& root_parts, const std::string& dir,
                        std::vector<std::string>& below)
{
    std::optional<std::vector<std::string>> parts = components(dir);
    if (!parts)
        return "directory " + shown(dir) + " " + kPathRule;
    if (parts->size() <= root_parts.size() || !std::equal(root_parts.begin(), root_parts.end(), parts->begin()))
        return "directory " + shown(dir) + " is not below tier root " + shown(root);
    below.assign(parts->begin() + static_cast<std::ptrdiff_t>(root_parts.size()), parts->end());
    return "";
}

// The directory holding the tier root.  Components above the root are the
// admin's (e.g. /var/run -> /run), so they may be symlinks and are followed.
Fd open_parent_of_root(const std::vector<std::string>& root_parts, std::string& parent_path, int flags)
{
    parent_path = path_of(std::vector<std::string>(root_parts.begin(), root_parts.end() - 1));
    return Fd(::open(parent_path.c_str(), flags | O_DIRECTORY | O_CLOEXEC));
}

// Why `name` in dirfd (called `label` in the message) could not be opened as
// a directory with error err; `outcome` says what happens because of it.
std::string unopenable(int dirfd, const std::string& name, const std::string& label, int err, const char* outcome)
{
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            return label + " is a symlink; " + outcome;
        if (!S_ISDIR(st.st_mode))
            return label + " is not a directory; " + outcome;
    }
    return cannot("open", label, err) + "; " + outcome;
}

std::string other_file_system(const std::string& label, const char* outcome)
{
    return label + " is on another file system than the tier root (a mount point?); " + outcome;
}

// ---------------------------------------------------------------------------
// prepare_job_dir

using Status = PrepareResult::Status;

// Ends prepare_job_dir early with a status and its one-line message.
struct Refusal {
    Status status;
    std::string message;
};

[[noreturn]] void refuse(Status status, std::string message)
{
    throw Refusal{status, std::move(message)};
}

const char* const kRefused = "refusing to use it";

dev_t device_of(const Fd& fd, const std::string& label)
{
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        refuse(Status::BrokenTier, cannot("stat", label, errno));
    return st.st_dev;
}

// Opens `name` in dirfd as a directory, creating it if missing (mode 0755,
// owned by the caller).  What is there but is no real directory is refused
// with `status`; a tier that will not create it is broken.
Fd open_or_create_dir(int dirfd, const std::string& name, const std::string& label, Status status)
{
    Fd fd = open_dir_at(dirfd, name);
    if (fd.valid())
        return fd;
    int err = errno;
    if (err != ENOENT)
        refuse(status, unopenable(dirfd, name, label, err, kRefused));
    const bool created = ::mkdirat(dirfd, name.c_str(), 0755) == 0;
    err = errno;
    if (!created && err != EEXIST)
        refuse(Status::BrokenTier, cannot("create", label, err));
    fd = open_dir_at(dirfd, name);
    err = errno;
    if (!fd.valid())
        refuse(status, unopenable(dirfd, name, label, err, kRefused));
    // mkdirat's mode is cut by the umask, and the job's user must be able to
    // pass through the shared levels to reach their own directory.
    if (created && ::fchmod(fd.get(), 0755) != 0)
        refuse(Status::BrokenTier, cannot("set the mode of", label, errno));
    return fd;
}

Fd open_tier_root(const std::vector<std::string>& root_parts, const std::string& root)
{
    std::string parent_path;
    Fd parent = open_parent_of_root(root_parts, parent_path, O_RDONLY);
    if (!parent.valid()) {
        const int err = errno;
        if (err == ENOENT)
            refuse(Status::BrokenTier,
                   "tier root " + shown(root) + " is missing and so is its parent " + shown(parent_path));
        refuse(Status::BrokenTier, cannot("open", shown(parent_path), err) + " (the parent of tier root " +
                                       shown(root) + ")");
    }
    // A missing root with its parent present is a fresh tmpfs after a reboot.
    return open_or_create_dir(parent.get(), root_parts.back(), "tier root " + shown(root), Status::BrokenTier);
}

// Makes the job's own directory: created for uid:gid, or reused if it already
// is uid's.  A directory created here is removed again if it cannot be
// completed, so that it does not block a retry as "belongs to uid 0".
void make_leaf(int parent, const std::string& name, const std::string& path, dev_t tier_dev, uid_t uid, gid_t gid)
{
    const std::string label = shown(path);
    // 0700 from the start: nobody else can put anything in before the chown.
    const bool created = ::mkdirat(parent, name.c_str(), 0700) == 0;
    if (!created && errno != EEXIST)
        refuse(Status::BrokenTier, cannot("create", label, errno));
    Fd fd;
    try {
        fd = open_dir_at(parent, name);
        if (!fd.valid())
            refuse(Status::UserProblem, unopenable(parent, name, label, errno, kRefused));
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0)
            refuse(Status::BrokenTier, cannot("stat", label, errno));
        if (st.st_dev != tier_dev)
            refuse(Status::UserProblem, other_file_system(label, kRefused));
        if (created) {
            if (st.st_uid != ::geteuid())
                refuse(Status::UserProblem, label + " was replaced while being created; " + kRefused);
            // Fails unless the caller is root or uid itself (the unit tests as a user).
            if (::fchown(fd.get(), uid, gid) != 0) {
                const int err = errno;
                refuse(Status::UserProblem, "cannot give " + label + " to uid " + std::to_string(uid) + " gid " +
                                                std::to_string(gid) + ": " + std::strerror(err));
            }
        } else {
            if (st.st_uid != uid)
                refuse(Status::UserProblem, label + " exists and belongs to uid " + std::to_string(st.st_uid));
            if (st.st_gid != gid && ::fchown(fd.get(), static_cast<uid_t>(-1), gid) != 0) {
                const int err = errno;
                refuse(Status::UserProblem,
                       "cannot give " + label + " to gid " + std::to_string(gid) + ": " + std::strerror(err));
            }
        }
        if (::fchmod(fd.get(), 0700) != 0)
            refuse(Status::BrokenTier, cannot("set the mode of", label, errno));
    } catch (const Refusal&) {
        if (created) {
            fd.reset();
            ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
        }
        throw;
    }
}

// ---------------------------------------------------------------------------
// remove_tree_within

const char* const kNothingRemoved = "nothing removed";
const char* const kLeftInPlace = "left in place";

// Removes one directory tree depth first, without recursion, holding at most
// kMaxOpenLevels directories open (see safe_fs.hpp).
class TreeRemover {
public:
    // parent_path: the path of the directory that holds the tree (messages only).
    TreeRemover(dev_t tier_dev, std::string parent_path, RemoveResult& result)
        : tier_dev_(tier_dev), parent_path_(std::move(parent_path)), result_(result)
    {
    }
    ~TreeRemover()
    {
        for (Level& level : levels_)
            if (level.dir)
                ::closedir(level.dir);
    }
    TreeRemover(const TreeRemover&) = delete;
    TreeRemover& operator=(const TreeRemover&) = delete;

    // Removes `name` in parent_fd and everything below it.
    void run(int parent_fd, const std::string& name)
    {
        top_parent_fd_ = parent_fd;
        enter(parent_fd, name);
        while (!levels_.empty() && !stopped_)
            step();
    }

private:
    struct Level {
        std::string name;
        dev_t dev = 0;
        ino_t ino = 0;
        DIR* dir = nullptr;               // null while closed to bound the open fds
        std::set<std::string> kept;       // entries given up on: skipped when read again
        bool incomplete = false;          // something below stays, so rmdir cannot succeed
    };

    std::string current_path() const
    {
        std::string path = parent_path_;
        for (const Level& level : levels_)
            path += "/" + level.name;
        return path;
    }
    std::string path_of(const std::string& name) const { return shown(current_path() + "/" + name); }

    void keep(const std::string& name)
    {
        if (levels_.empty())
            return;
        levels_.back().kept.insert(name);
        levels_.back().incomplete = true;
    }
    void keep(const std::string& name, std::string problem)
    {
        result_.problems.push_back(std::move(problem));
        keep(name);
    }

    // One entry of the deepest open directory, or leaving it when it is done.
    void step()
    {
        Level& top = levels_.back();
        errno = 0;
        const dirent* entry = ::readdir(top.dir);
        if (!entry) {
            if (errno != 0) {
                const int err = errno;
                result_.problems.push_back(cannot("read", shown(current_path()), err));
                top.incomplete = true;
            }
            leave();
            return;
        }
        const std::string name = entry->d_name;
        if (name == "." || name == ".." || top.kept.count(name) != 0)
            return;
        const int fd = ::dirfd(top.dir);
        if (is_directory(fd, *entry))
            enter(fd, name);  // invalidates `top`
        else
            unlink_entry(fd, name);
    }

    static bool is_directory(int dirfd, const dirent& entry)
    {
        if (entry.d_type != DT_UNKNOWN)
            return entry.d_type == DT_DIR;
        struct stat st {};
        return ::fstatat(dirfd, entry.d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }

    // Files, symlinks (the link itself, never its target), sockets, fifos...
    void unlink_entry(int dirfd, const std::string& name)
    {
        if (::unlinkat(dirfd, name.c_str(), 0) == 0) {
            ++result_.removed;
        } else if (errno != ENOENT) {
            const int err = errno;
            keep(name, cannot("remove", path_of(name), err));
        }
    }

    void enter(int parent_fd, const std::string& name)
    {
        const char* outcome = levels_.empty() ? kNothingRemoved : kLeftInPlace;
        Fd fd = open_owned_dir(parent_fd, name);
        if (!fd.valid()) {
            const int err = errno;
            if (err != ENOENT)  // else removed meanwhile: fine
                keep(name, unopenable(parent_fd, name, path_of(name), err, outcome));
            return;
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) {
            const int err = errno;
            keep(name, cannot("stat", path_of(name), err) + "; " + outcome);
            return;
        }
        if (st.st_dev != tier_dev_) {
            keep(name, other_file_system(path_of(name), outcome));
            return;
        }
        make_owned_dir_writable(fd, st);
        DIR* dir = ::fdopendir(fd.get());
        if (!dir) {
            const int err = errno;
            keep(name, cannot("read", path_of(name), err) + "; " + outcome);
            return;
        }
        fd.release();
        levels_.push_back(Level{name, st.st_dev, st.st_ino, dir, {}, false});
        close_shallow_levels();
    }

    // The caller (the stager, as the user) may own directories it cannot read
    // or search, e.g. extracted read-only from an archive; it may change their
    // mode, so it does.  Not done as root, which needs no permission and
    // whose fchmodat below would follow a symlink swapped in by the owner.
    static Fd open_owned_dir(int parent_fd, const std::string& name)
    {
        Fd fd = open_dir_at(parent_fd, name);
        if (fd.valid() || errno != EACCES || ::geteuid() == 0)
            return fd;
        struct stat st {};
        if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != ::geteuid() || ::fchmodat(parent_fd, name.c_str(), S_IRWXU, 0) != 0) {
            errno = EACCES;
            return fd;
        }
        return open_dir_at(parent_fd, name);
    }

    static void make_owned_dir_writable(const Fd& fd, const struct stat& st)
    {
        if (st.st_uid == ::geteuid() && (st.st_mode & S_IRWXU) != S_IRWXU)
            ::fchmod(fd.get(), (st.st_mode & 07777) | S_IRWXU);  // if it fails, unlinkat will say why
    }

    // Keeps the kMaxOpenLevels deepest levels open; the open ones are always
    // the deepest, from first_open_ on.
    void close_shallow_levels()
    {
        while (levels_.size() - first_open_ > kMaxOpenLevels) {
            ::closedir(levels_[first_open_].dir);
            levels_[first_open_].dir = nullptr;
            ++first_open_;
        }
    }

    // Done with the deepest level: removes it from its parent.
    void leave()
    {
        Level done = std::move(levels_.back());
        levels_.pop_back();
        int parent_fd = top_parent_fd_;
        if (!levels_.empty()) {
            if (!levels_.back().dir && !reopen_parent(done)) {
                ::closedir(done.dir);
                stopped_ = true;
                return;
            }
            parent_fd = ::dirfd(levels_.back().dir);
        }
        ::closedir(done.dir);
        if (::unlinkat(parent_fd, done.name.c_str(), AT_REMOVEDIR) == 0) {
            ++result_.removed;
            return;
        }
        const int err = errno;
        if (err == ENOENT)
            return;
        if (done.incomplete && (err == ENOTEMPTY || err == EEXIST))
            keep(done.name);  // what stays below is reported already
        else
            keep(done.name, cannot("remove", path_of(done.name), err));
    }

    // Reopens the parent level, closed to bound the open fds, through ".." of
    // the child: only if it is still the very directory that was left, or
    // else the tree was moved meanwhile and the walk could end up outside it.
    bool reopen_parent(const Level& child)
    {
        Level& parent = levels_.back();
        Fd fd(::openat(::dirfd(child.dir), "..", kDirFlags));
        struct stat st {};
        if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_dev != parent.dev || st.st_ino != parent.ino) {
            result_.problems.push_back(shown(current_path()) + " was moved or replaced while being removed; stopped");
            return false;
        }
        parent.dir = ::fdopendir(fd.get());
        if (!parent.dir) {
            const int err = errno;
            result_.problems.push_back(cannot("read", shown(current_path()), err) + "; stopped");
            return false;
        }
        fd.release();
        first_open_ = levels_.size() - 1;
        return true;
    }

    const dev_t tier_dev_;
    const std::string parent_path_;
    RemoveResult& result_;
    int top_parent_fd_ = -1;
    std::vector<Level> levels_;  // from the tree's top to the directory being read
    std::size_t first_open_ = 0;
    bool stopped_ = false;
};

}  // namespace

PrepareResult prepare_job_dir(const std::string& root, const std::string& dir, uid_t uid, gid_t gid)
{
    try {
        std::vector<std::string> root_parts;
        std::vector<std::string> below;
        if (std::string problem = root_problem(root, root_parts); !problem.empty())
            refuse(Status::BrokenTier, problem);
        if (std::string problem = dir_problem(root, root_parts, dir, below); !problem.empty())
            refuse(Status::UserProblem, problem);

        Fd current = open_tier_root(root_parts, root);
        const dev_t tier_dev = device_of(current, "tier root " + shown(root));
        std::string path = root;
        for (std::size_t i = 0; i + 1 < below.size(); ++i) {
            path += "/" + below[i];
            Fd next = open_or_create_dir(current.get(), below[i], shown(path), Status::UserProblem);
            if (device_of(next, shown(path)) != tier_dev)
                refuse(Status::UserProblem, other_file_system(shown(path), kRefused));
            current = std::move(next);
        }
        make_leaf(current.get(), below.back(), path + "/" + below.back(), tier_dev, uid, gid);
        return PrepareResult{};
    } catch (const Refusal& refusal) {
        return PrepareResult{refusal.status, refusal.message};
    }
}

namespace {
// The directory holding `dir`, reached from the tier root component by
// component without following a symlink or leaving the tier's file system.
struct ParentOfDir {
    Fd fd;                   // invalid: see problem (or nothing there)
    dev_t tier_dev = 0;
    std::string path;        // of the parent
    std::string leaf;        // dir's last component
    std::string problem;     // "" and no fd: something on the way is missing
};

ParentOfDir open_parent_within(const std::string& root, const std::string& dir, const char* outcome)
{
    ParentOfDir out;
    std::vector<std::string> root_parts;
    std::vector<std::string> below;
    std::string problem = root_problem(root, root_parts);
    if (problem.empty())
        problem = dir_problem(root, root_parts, dir, below);
    if (!problem.empty()) {
        out.problem = problem + "; " + outcome;
        return out;
    }
    // Missing anywhere on the way means there is nothing to act on.
    std::string parent_path;
    const Fd parent = open_parent_of_root(root_parts, parent_path, O_PATH);
    if (!parent.valid()) {
        const int err = errno;
        if (err != ENOENT)
            out.problem = cannot("open", shown(parent_path), err) + "; " + outcome;
        return out;
    }
    Fd current = open_passage_at(parent.get(), root_parts.back());
    if (!current.valid()) {
        const int err = errno;
        if (err != ENOENT)
            out.problem = unopenable(parent.get(), root_parts.back(), "tier root " + shown(root), err, outcome);
        return out;
    }
    struct stat tier {};
    if (::fstat(current.get(), &tier) != 0) {
        const int err = errno;
        out.problem = cannot("stat", "tier root " + shown(root), err) + "; " + outcome;
        return out;
    }
    std::string path = root;
    for (std::size_t i = 0; i + 1 < below.size(); ++i) {
        path += "/" + below[i];
        Fd next = open_passage_at(current.get(), below[i]);
        if (!next.valid()) {
            const int err = errno;
            if (err != ENOENT)
                out.problem = unopenable(current.get(), below[i], shown(path), err, outcome);
            return out;
        }
        struct stat st {};
        if (::fstat(next.get(), &st) != 0) {
            const int err = errno;
            out.problem = cannot("stat", shown(path), err) + "; " + outcome;
            return out;
        }
        if (st.st_dev != tier.st_dev) {
            out.problem = other_file_system(shown(path), outcome);
            return out;
        }
        current = std::move(next);
    }
    out.fd = std::move(current);
    out.tier_dev = tier.st_dev;
    out.path = path;
    out.leaf = below.back();
    return out;
}
}  // namespace

RemoveResult remove_tree_within(const std::string& root, const std::string& dir)
{
    RemoveResult result;
    ParentOfDir parent = open_parent_within(root, dir, kNothingRemoved);
    if (!parent.problem.empty())
        result.problems.push_back(parent.problem);
    if (!parent.fd.valid())
        return result;
    // dir itself is checked like everything inside (symlink, mount point).
    TreeRemover(parent.tier_dev, parent.path, result).run(parent.fd.get(), parent.leaf);
    return result;
}

DetachResult detach_mount_within(const std::string& root, const std::string& dir)
{
    DetachResult result;
    ParentOfDir parent = open_parent_within(root, dir, "nothing unmounted");
    result.problem = parent.problem;
    if (!parent.fd.valid())
        return result;
    struct stat st {};
    if (::fstatat(parent.fd.get(), parent.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        // A symlink or a plain directory of the tier: nothing of ours is mounted there.
        if (!S_ISDIR(st.st_mode) || st.st_dev == parent.tier_dev)
            return result;
    } else if (errno == ENOENT) {
        return result;
    }
    // Otherwise a mount, or what cannot be stat'ed: a FUSE mount denies
    // every other user, root included (EACCES), and one whose server died
    // answers ENOTCONN.  umount2 tells (EINVAL: not a mount point).
    // Through the parent's fd, so no path above it is resolved again; the
    // leaf is never followed even if it became a symlink since the stat.
    const std::string through_fd = "/proc/self/fd/" + std::to_string(parent.fd.get()) + "/" + parent.leaf;
    if (::umount2(through_fd.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
        result.detached = true;
    else if (const int err = errno; err != EINVAL)  // EINVAL: not a mount point (any more)
        result.problem = cannot("unmount", shown(dir), err);
    return result;
}

}  // namespace dlstage
