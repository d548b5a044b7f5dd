#include "lib/sys/tree_remover.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fs_identity.hpp"
#include "lib/sys/quick_stat.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {

std::string other_file_system(const std::string& label, const char* outcome)
{
    return label + " is on another file system than the tier root (a mount point?); " + outcome;
}

const char* const kNothingRemoved = "nothing removed";
const char* const kLeftInPlace = "left in place";

// Removes one directory tree depth first, without recursion, holding at most
// kMaxOpenLevels directories open (see tree_remover.hpp).
class TreeRemover {
public:
    // parent_path: the path of the directory that holds the tree (messages
    // only).  as: whose permissions the tree below its top is removed with;
    // none: the caller's.
    TreeRemover(dev_t tier_dev, std::string parent_path, RemoveResult& result, std::optional<Owner> as = {})
        : tier_dev_(tier_dev), parent_path_(std::move(parent_path)), result_(result), as_(as),
          acting_uid_(as ? as->uid : ::geteuid())
    {
    }
    ~TreeRemover()
    {
        for (Entered& level : levels_)
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
        // Below the top, as the owner (if asked); the top itself goes as
        // the caller, from its root-owned parent (leave()).
        std::optional<FsIdentity> owner;
        if (as_)
            owner.emplace(as_->uid, as_->gid);
        while (!levels_.empty() && !stopped_)
            step();
    }

private:
    struct Entered {
        std::string name;
        dev_t dev = 0;
        ino_t ino = 0;
        DIR* dir = nullptr;          // null while closed to bound the open fds
        std::set<std::string> kept;  // entries given up on: skipped when read again
        bool incomplete = false;     // something below stays, so rmdir cannot succeed
    };

    std::string current_path() const
    {
        std::string path = parent_path_;
        for (const Entered& level : levels_)
            path += "/" + level.name;
        return path;
    }
    std::string path_of(const std::string& name) const { return shown_path(current_path() + "/" + name); }

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
        Entered& top = levels_.back();
        errno = 0;
        const dirent* entry = ::readdir(top.dir);
        if (!entry) {
            if (errno != 0) {
                const int err = errno;
                result_.problems.push_back(cannot("read", shown_path(current_path()), err));
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
        QuickStat f;
        return quick_stat(dirfd, entry.d_name, AT_SYMLINK_NOFOLLOW, f) && S_ISDIR(f.mode);
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

    // A mount point below is never opened: an O_PATH lookup and a cached
    // statx tell its device without a word to its file system.
    void enter(int parent_fd, const std::string& name)
    {
        const char* outcome = levels_.empty() ? kNothingRemoved : kLeftInPlace;
        const Fd passage = open_passage_at(parent_fd, name);
        QuickStat f;
        if (!passage.valid() || !quick_stat(passage.get(), f)) {
            const int err = errno;
            if (err != ENOENT)  // else removed meanwhile: fine
                keep(name, unopenable(parent_fd, name, path_of(name), err, outcome));
            return;
        }
        if (f.dev != tier_dev_) {
            keep(name, other_file_system(path_of(name), outcome));
            return;
        }
        Fd fd = open_owned_dir(passage, f);
        if (!fd.valid()) {
            const int err = errno;
            keep(name, cannot("open", path_of(name), err) + "; " + outcome);
            return;
        }
        DIR* dir = ::fdopendir(fd.get());
        if (!dir) {
            const int err = errno;
            keep(name, cannot("read", path_of(name), err) + "; " + outcome);
            return;
        }
        fd.release();
        levels_.push_back(Entered{name, f.dev, f.ino, dir, {}, false});
        close_shallow_levels();
    }

    static std::string unopenable(int dirfd, const std::string& name, const std::string& label, int err,
                                  const char* outcome)
    {
        QuickStat f;
        if (quick_stat(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW, f)) {
            if (S_ISLNK(f.mode))
                return label + " is a symlink; " + outcome;
            if (!S_ISDIR(f.mode))
                return label + " is not a directory; " + outcome;
        }
        return cannot("open", label, err) + "; " + outcome;
    }

    // The caller (the stager, as the user) may own directories it cannot read
    // or search, e.g. extracted read-only from an archive; it may change their
    // mode, so it does, through the O_PATH fd's /proc link (fchmod takes no
    // O_PATH fd), which cannot be swapped for a symlink.  Not done as root,
    // which needs no permission.
    Fd open_owned_dir(const Fd& passage, const QuickStat& f) const
    {
        Fd fd = reopen_for_reading(passage);
        if (acting_uid_ == 0 || f.uid != acting_uid_ || (f.mode & S_IRWXU) == S_IRWXU)
            return fd;
        const std::string self = "/proc/self/fd/" + std::to_string(passage.get());
        if (::chmod(self.c_str(), (f.mode & 07777) | S_IRWXU) != 0)  // if it fails, open or unlinkat will say why
            return fd;
        return fd.valid() ? std::move(fd) : reopen_for_reading(passage);
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
        Entered done = std::move(levels_.back());
        levels_.pop_back();
        // The top is in a level only root may change: removed as the caller.
        std::optional<FsIdentity> caller;
        if (levels_.empty() && as_)
            caller.emplace(::geteuid(), ::getegid());
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
    bool reopen_parent(const Entered& child)
    {
        Entered& parent = levels_.back();
        Fd fd(::openat(::dirfd(child.dir), "..", kDirFlags));
        struct stat st {};
        if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_dev != parent.dev || st.st_ino != parent.ino) {
            result_.problems.push_back(shown_path(current_path()) +
                                       " was moved or replaced while being removed; stopped");
            return false;
        }
        parent.dir = ::fdopendir(fd.get());
        if (!parent.dir) {
            const int err = errno;
            result_.problems.push_back(cannot("read", shown_path(current_path()), err) + "; stopped");
            return false;
        }
        fd.release();
        first_open_ = levels_.size() - 1;
        return true;
    }

    const dev_t tier_dev_;
    const std::string parent_path_;
    RemoveResult& result_;
    const std::optional<Owner> as_;
    const uid_t acting_uid_;
    int top_parent_fd_ = -1;
    std::vector<Entered> levels_;  // from the tree's top to the directory being read
    std::size_t first_open_ = 0;
    bool stopped_ = false;
};

}  // namespace

void remove_tree_on(int parent_fd, const std::string& name, dev_t dev, const std::string& shown_parent,
                    RemoveResult& result, const std::optional<Owner>& as)
{
    TreeRemover(dev, shown_parent, result, as).run(parent_fd, name);
}

RemoveResult remove_tree_at(int dir_fd, const std::string& name, const std::string& shown_dir)
{
    RemoveResult result;
    struct stat st {};
    if (::fstat(dir_fd, &st) != 0) {
        result.problems.push_back(cannot("stat", shown_path(shown_dir), errno));
        return result;
    }
    remove_tree_on(dir_fd, name, st.st_dev, shown_dir, result);
    return result;
}

RemoveResult remove_tree(const std::string& path)
{
    const auto [parent, name] = split_parent(path);
    const Fd parent_fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent_fd.valid()) {
        RemoveResult result;
        result.problems.push_back(cannot("open", shown_path(parent), errno));
        return result;
    }
    return remove_tree_at(parent_fd.get(), name, parent);
}

}  // namespace dlstage
