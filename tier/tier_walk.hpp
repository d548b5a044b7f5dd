// The walk from a tier root's parent down to a job directory's parent, by
// fd, trusting each level only as tier/safe_fs.hpp says: the part of
// tier/safe_fs.cpp's work that reaches the job directory, kept apart so each
// file says one thing.  Used by tier/safe_fs, and by tier/cache_evict for
// the name of what it moves aside; everything else reaches a tier through
// tier/safe_fs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "lib/sys/fd.hpp"
#include "lib/sys/quick_stat.hpp"
#include "tier/untrusted.hpp"

namespace dlstage::tier_walk {

// A tier path split for the walk: the root's parent (the admin's), the
// root's name, and dir's components below the root (never empty).
struct TierPath {
    std::string root;
    std::string parent_path;
    std::string root_name;
    std::vector<std::string> below;
};

// One directory of the walk: an O_PATH fd, its facts, and its names.
struct Level {
    Fd fd;
    QuickStat facts;
    std::string shown;  // as configured, for messages
    std::string real;   // as the kernel names it, for mountinfo
};

// Ends a walk early with a failure.
struct WalkFailure {
    std::string problem;
    int err = 0;
    bool at_tier_parent = false;
};

[[noreturn]] void fail_walk(std::string problem, int err = 0, bool at_tier_parent = false);

// parent/name ("/name" below "/").
std::string child_path(const std::string& parent, const std::string& name);

// Lazily unmounts whatever is mounted on `name` in dirfd, through the fd so
// that no path above it is resolved again; the name itself is never
// followed.  0, or the errno (EINVAL: nothing mounted there).
int detach_at(int dirfd, const std::string& name);

// NAME.untrusted-STAMP-PID[-N], the name NAME is moved aside to (N: the
// N-th try within the same second); tier/cache_entry knows the form.
std::string aside_name(const std::string& name, const std::string& stamp, int n);

class TierWalk {
public:
    TierWalk(Untrusted on_untrusted, uid_t trusted_uid, std::vector<std::string>* repairs)
        : on_untrusted_(on_untrusted), trusted_uid_(trusted_uid), repairs_(repairs)
    {
    }

    // The admin's directory holding the tier root; may be reached through
    // the admin's symlinks.  Missing: nothing there (quiet) or a node fault.
    std::optional<Level> open_tier_parent(const TierPath& tp, bool missing_is_failure);

    // A level below `parent`: the tier root (is_root) or a directory between
    // it and the job directory.  Nothing there: created if `create`, else
    // std::nullopt.
    std::optional<Level> open_level(const Level& parent, const std::string& name, bool is_root, bool create);

    // Renames `name` out of the way within parent, detaching a mount on it
    // first; the new name is logged with what was wrong with it.  `judged`:
    // the entry found wrong (its dev and inode); if what the rename moved is
    // another (a tier every node sees: another node's prolog moved the
    // judged one aside and made a good one meanwhile), it is put back.
    static void move_aside(const Level& parent, const std::string& name, const std::string& label,
                           const std::string& why, bool mounted, std::vector<std::string>* repairs,
                           const QuickStat* judged = nullptr);

private:
    static constexpr int kAttempts = 5;

    void make_level(const Level& parent, const std::string& name, const std::string& label);
    // Not trusted: moved aside by the prolog, refused by the others.
    void untrusted(const Level& parent, const std::string& name, const std::string& label, const std::string& why,
                   bool mounted = false, const QuickStat* judged = nullptr);

    Untrusted on_untrusted_;
    uid_t trusted_uid_;
    std::vector<std::string>* repairs_;
};

// From the tier root's parent to the directory holding `dir`; nothing if
// something on the way is missing (and create is false).
std::optional<Level> walk_to_parent(TierWalk& walk, const TierPath& tp, bool create);

// Runs body on root/dir split for a walk; a malformed path or a walk that
// failed comes back as its failure.
std::optional<WalkFailure> walk_tier(const std::string& root, const std::string& dir,
                                     const std::function<void(const TierPath&)>& body);

// The directory holding `dir`, reached as the caller's trusted walk, and
// dir's name in it; no level when the walk failed (its problem, with
// `outcome` appended, added to `problems`) or something on the way is
// missing.
struct ParentOfDir {
    std::optional<Level> level;
    std::string leaf;
};

ParentOfDir open_parent_within(const std::string& root, const std::string& dir, const char* outcome,
                               std::vector<std::string>& problems);

}  // namespace dlstage::tier_walk
