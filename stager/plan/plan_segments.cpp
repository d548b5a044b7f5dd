#include "stager/plan/plan_segments.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dataset_entry.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "stager/plan/plan.hpp"

namespace dlstage::stager {

namespace {
// Levels the cut goes down at most looking for kMinUnits directories.
constexpr int kMaxCutDepth = 4;

struct Listed {
    std::string path;  // relative to the root
    struct stat st {};
};

std::string shown(const std::string& root, const std::string& rel)
{
    return shown_path(rel.empty() ? root : root + "/" + rel);
}

// One directory of a level the cut looks at: its subdirectories (with their
// lstat) and the names of everything else in it, not stat'ed yet.
struct Listing {
    std::string rel;
    std::vector<Listed> dirs;
    std::vector<std::string> others;
};

Fd open_below(int root_fd, const std::string& root, const std::string& rel)
{
    Fd dir(::openat(root_fd, rel.empty() ? "." : rel.c_str(), kDirFlags));
    if (!dir.valid())
        throw_cannot("read", shown(root, rel), errno);
    return dir;
}

std::string joined(const std::string& rel, const char* name)
{
    return rel.empty() ? std::string(name) : rel + "/" + name;
}

// The directory rel below the root, listed: a subdirectory is told by its
// type in the listing (one stat each, for its identity and times), or by a
// stat where the file system does not say.  What else it holds is named
// only: stat'ed later, in slices (keep_others); an entry of unknown type
// then takes a second stat (a file system that gives no types in its
// listings pays it for each file).
Listing list_dir(int root_fd, const std::string& root, const std::string& rel, const Caller& reader)
{
    const Fd dir = open_below(root_fd, root, rel);
    DirStream stream(dir.get());
    if (!stream.valid())
        throw_cannot("read", shown(root, rel), errno);
    Listing listing{rel, {}, {}};
    while (const dirent* d = stream.next()) {
        if (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN) {
            listing.others.emplace_back(d->d_name);
            continue;
        }
        Listed entry;
        entry.path = joined(rel, d->d_name);
        if (::fstatat(dir.get(), d->d_name, &entry.st, AT_SYMLINK_NOFOLLOW) != 0)
            throw_cannot("read", shown(root, entry.path), errno);
        if (!S_ISDIR(entry.st.st_mode)) {
            listing.others.emplace_back(d->d_name);
            continue;
        }
        check_dataset_entry(FoundEntry{dir.get(), d->d_name, entry.path, entry.st}, root, &reader);
        listing.dirs.push_back(std::move(entry));
    }
    if (stream.error() != 0)
        throw_cannot("read", shown(root, rel), stream.error());
    return listing;
}

// What a directory the cut goes through holds besides its subdirectories
// (its files and symlinks): names, stat'ed later in slices.
void keep_others(const Listed& dir, Listing& listing, std::vector<NamesIn>& loose)
{
    if (!listing.others.empty())
        loose.push_back(NamesIn{dir.path, dir.st.st_dev, dir.st.st_ino, std::move(listing.others)});
}

// Goes down from the root until a level holds kMinUnits directories, or
// the next one holds none (a level of class directories full of files),
// or kMaxCutDepth levels.  The directories above the returned level, and
// those of a last level of files only, go into `above`; the names of their
// files into `loose`.  The level's directories are returned, in path order.
std::vector<Listed> cut(int root_fd, const std::string& root, const Caller& reader, EntryList& above,
                        std::vector<NamesIn>& loose)
{
    std::vector<Listed> level{Listed{}};  // the root
    for (int depth = 0;; ++depth) {
        std::vector<Listing> listings;
        std::vector<Listed> below;
        for (const Listed& dir : level) {
            listings.push_back(list_dir(root_fd, root, dir.path, reader));
            for (const Listed& sub : listings.back().dirs)
                below.push_back(sub);
        }
        for (std::size_t i = 0; i < level.size(); ++i) {
            if (!level[i].path.empty())
                add_walked(above, level[i].path, level[i].st, {});
            keep_others(level[i], listings[i], loose);
        }
        std::sort(below.begin(), below.end(), [](const Listed& a, const Listed& b) { return a.path < b.path; });
        if (below.size() >= kMinUnits || below.empty() || depth + 1 >= kMaxCutDepth)
            return below;
        level = std::move(below);
    }
}

// What the units walked so far held and took, in all.
struct Walked {
    std::size_t units = 0;
    std::size_t entries = 0;
    std::uint64_t bytes = 0;
    double seconds = 0;
};

// Units in the next segment: `first`, then twice the last, as many as the
// limits allow by what the units walked so far held and took on average,
// one at least.  The seconds bound what the segment's files wait between
// their stat and their open, whatever the walk's threads: a segment of one
// unit per walk thread (16 directories of the 20,000-file tree behind
// pfssim, 3,200 files) outlived the file system's 1 s cache before its
// last files were opened, and bench/run's tree took 15.0 s instead of
// 11.0 s, with no gain at 100,000 files (issue 58).
std::size_t units_next(std::size_t last, std::size_t first, const Walked& walked, const SegmentLimits& limits)
{
    std::size_t want = last == 0 ? first : 2 * last;
    if (walked.units > 0) {
        const std::size_t per_unit_entries = std::max<std::size_t>(1, walked.entries / walked.units);
        const std::uint64_t per_unit_bytes = std::max<std::uint64_t>(1, walked.bytes / walked.units);
        const double per_unit_seconds = walked.seconds / static_cast<double>(walked.units);
        want = std::min(want, limits.entries / per_unit_entries);
        want = std::min<std::size_t>(want, static_cast<std::size_t>(limits.bytes / per_unit_bytes));
        if (per_unit_seconds > 0)
            want = std::min(want, static_cast<std::size_t>(std::min(limits.seconds / per_unit_seconds, 1e9)));
    }
    return std::max<std::size_t>(1, want);
}
}  // namespace

SegmentedWalk::SegmentedWalk(const Dataset& dataset, unsigned walk_threads, SegmentLimits limits)
    : dataset_(dataset), threads_(walk_threads), limits_(limits), thread_([this] { run(); })
{
}

SegmentedWalk::~SegmentedWalk()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    room_.notify_one();
    thread_.join();
}

bool SegmentedWalk::next(EntryList& segment)
{
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !segments_.empty() || done_; });
    if (!segments_.empty()) {
        segment = std::move(segments_.front());
        segments_.pop_front();
        room_.notify_one();
        return true;
    }
    if (error_)
        std::rethrow_exception(error_);
    return false;
}

SegmentedWalk::Next SegmentedWalk::try_next(EntryList& segment)
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (segments_.empty() && !done_)
            return Next::NotYet;
    }
    return next(segment) ? Next::Segment : Next::End;
}

void SegmentedWalk::push(EntryList&& segment)
{
    segment.sort_by_path();
    const std::lock_guard<std::mutex> lock(mutex_);
    segments_.push_back(std::move(segment));
    ready_.notify_one();
}

// The walk waits while a segment it walked is not taken yet: it stays one
// segment ahead of the transfer, not the whole tree.
bool SegmentedWalk::wait_for_room()
{
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return segments_.empty() || stop_; });
    return !stop_;
}

void SegmentedWalk::run()
{
    try {
        walk();
    } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    ready_.notify_one();
}

// Cuts `total` units, in order, into segments of units_next each (the
// first of `first_count`), waiting for room before each: walk_units(first,
// count, segment) walks units [first, first + count) into the segment.
// False when stopped.
bool SegmentedWalk::segments_of(std::size_t total, std::size_t first_count, const UnitWalker& walk_units)
{
    std::size_t last = 0;
    Walked walked;
    for (std::size_t first = 0; first < total;) {
        if (!wait_for_room())
            return false;
        const auto start = std::chrono::steady_clock::now();
        const std::size_t count = std::min(total - first, units_next(last, first_count, walked, limits_));
        EntryList segment;
        walk_units(first, count, segment);
        walked.units += count;
        walked.entries += segment.size();
        walked.bytes += segment.total_file_bytes();
        walked.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        last = count;
        first += count;
        push(std::move(segment));
    }
    return true;
}

// The directories above the units first (their files come later), then
// those files in slices, then the units: a tree of one large directory is
// read a slice at a time while the walk stats the next, not after its walk.
void SegmentedWalk::walk()
{
    const std::string& root = dataset_.source;
    const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid())
        throw_cannot("read", shown_path(root), errno);
    const Caller reader = Caller::current();
    EntryList above;
    std::vector<NamesIn> loose;
    const std::vector<Listed> units = cut(root_fd.get(), root, reader, above, loose);
    push(std::move(above));

    std::mutex add;
    EntryList* into = nullptr;
    const EntryVisitor visit = [&](const FoundEntry& found) {
        const std::string target = check_dataset_entry(found, root, &reader);
        const std::lock_guard<std::mutex> lock(add);
        add_walked(*into, found.path, found.st, target);
    };

    // The loose names, a slice after the other: the first slice gives each
    // thread two names.
    std::size_t loose_total = 0;
    for (const NamesIn& in : loose)
        loose_total += in.names.size();
    std::size_t dir = 0, name = 0;  // where the next slice begins
    const bool slices_walked =
        segments_of(loose_total, 2 * threads_, [&](std::size_t, std::size_t count, EntryList& segment) {
            std::vector<NamesIn> slice;
            for (; count > 0; ++dir, name = 0) {
                const NamesIn& in = loose[dir];
                const std::size_t take = std::min(count, in.names.size() - name);
                const auto from = in.names.begin() + static_cast<std::ptrdiff_t>(name);
                slice.push_back(NamesIn{in.dir, in.dev, in.ino,
                                        std::vector<std::string>(from, from + static_cast<std::ptrdiff_t>(take))});
                count -= take;
                name += take;
                if (name < in.names.size())
                    break;
            }
            into = &segment;
            walk_names(root_fd.get(), root, slice, threads_, visit);
        });
    if (!slices_walked)
        return;
    loose.clear();

    segments_of(units.size(), 1, [&](std::size_t first, std::size_t count, EntryList& segment) {
        std::vector<SubtreeStart> starts;
        for (std::size_t u = first; u < first + count; ++u) {
            add_walked(segment, units[u].path, units[u].st, {});
            starts.push_back({units[u].path, units[u].st.st_dev, units[u].st.st_ino});
        }
        into = &segment;
        walk_below(root_fd.get(), root, starts, threads_, visit);
    });
}

}  // namespace dlstage::stager
