#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dataset_entry.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <dirent.h>
#include <exception>
#include <fcntl.h>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <utility>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
[[noreturn]] void cannot_read(const std::string& path, int err)
{
    throw_cannot("read", shown_path(path), err);
}

std::string path_of(const std::string& root, const std::string& rel)
{
    return rel.empty() ? root : root + "/" + rel;
}

// A directory still to list, and what it was when its parent was listed;
// or, listed already (walk_names), the names of it still to stat.
struct PendingDir {
    std::string rel;  // "" for the root
    dev_t dev = 0;
    ino_t ino = 0;
    bool listed = false;
    std::vector<std::string> names;  // when listed
};

// A directory open for the walk: kept open while a thread lists it or
// entries of it wait to be stat'ed relative to it.
struct OpenDir {
    Fd fd;
    std::string rel;
    unsigned inside = 0;  // threads listing it or stat'ing in it (under the walk's mutex)
};

// Names of one directory, to be stat'ed by whichever thread is free.
struct StatBatch {
    std::shared_ptr<OpenDir> dir;
    std::vector<std::string> names;
};

// Names per batch: a few metadata round trips for a thread, and still
// enough batches in a directory of a thousand files to keep 16 threads
// busy; on a local disk the lock per batch costs less than its stats.
constexpr std::size_t kBatch = 16;

// Every entry any walk in this process has found, for progress lines.
std::atomic<std::uint64_t> g_entries_found{0};

// The walk's state, shared by its threads.  A thread takes a batch of
// names of a directory nobody is in when there is one; else it lists a new
// directory, while fewer directories than threads are open; else it joins
// another thread's directory.  Lookups of names in one directory may run
// one at a time (the kernel serializes them on a FUSE mount without
// parallel directory operations; some network file systems lock the
// directory): threads that all stat in one directory of a walked tree
// walked 100,000 files in 1,000 directories behind pfssim (1 ms, 64
// slots) in 21.7 s, threads spread over directories in 6.5 s
// (bench/source-bench, issue 58).  At most `threads` directories are open
// (a lister past that bound lists only while no batch waits: every open
// directory is then held by a thread).
//
// Every thread works while stats are slow (walk_threads_for); while they
// answer in microseconds, threads past the CPUs wait at the gate.
class Walk {
public:
    Walk(int root_fd, const std::string& root, unsigned threads, const EntryVisitor& visit,
         std::deque<PendingDir> start)
        : root_fd_(root_fd), root_(root), visit_(visit), max_queued_(4 * std::max(1u, threads)),
          most_(std::max(1u, threads)), fast_(walk_threads_for(false, most_, usable_cpus())), allowed_(most_),
          pending_(std::move(start))
    {
    }

    void work()
    {
        const unsigned index = next_index_++;
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            if (index >= allowed_) {
                gate_.wait(lock, [&] { return index < allowed_ || done_ || error_; });
                if (done_ || error_)
                    return;
                continue;
            }
            changed_.wait(lock, [&] {
                return !batches_.empty() || !pending_.empty() || busy_ == 0 || error_ || index >= allowed_;
            });
            if (error_)
                return;
            if (index >= allowed_) {
                changed_.notify_one();  // pass on a wake-up meant for a thread still at work
                continue;
            }
            StatBatch batch;
            PendingDir dir;
            const bool stat_names = take_batch(batch);
            if (stat_names) {
                ++batch.dir->inside;
            } else if (!pending_.empty()) {
                dir = std::move(pending_.front());
                pending_.pop_front();
            } else {
                done_ = true;  // nothing pending and nobody busy
                gate_.notify_all();
                return;
            }
            ++busy_;
            lock.unlock();
            std::vector<PendingDir> subdirs;
            std::exception_ptr failed;
            std::shared_ptr<OpenDir> was_in = batch.dir;
            try {
                if (stat_names)
                    stat_all(batch, subdirs);
                else
                    was_in = list(dir, subdirs);
            } catch (...) {
                failed = std::current_exception();
            }
            batch.dir.reset();
            lock.lock();
            if (was_in)
                --was_in->inside;
            if (failed && !error_) {
                error_ = failed;
                stopping_ = true;
                gate_.notify_all();
            }
            for (PendingDir& d : subdirs)
                pending_.push_back(std::move(d));
            --busy_;
            lock.unlock();
            changed_.notify_all();
        }
    }

    void rethrow() const
    {
        if (error_)
            std::rethrow_exception(error_);
    }

private:
    // One directory's names, handed out in batches as they are read: the
    // stats of a flat directory of thousands of files run on every thread,
    // not one after the other (each costs a metadata round trip on a
    // parallel file system).  Everything is asked relative to the
    // directory's descriptor: one lookup per entry is the least there is.
    std::shared_ptr<OpenDir> list(const PendingDir& dir, std::vector<PendingDir>& subdirs)
    {
        std::shared_ptr<OpenDir> open(new OpenDir{open_dir(dir), dir.rel, 1}, [this](OpenDir* gone) {
            delete gone;
            --open_dirs_;
        });
        ++open_dirs_;
        if (dir.listed) {
            hand_out_listed(open, dir.names, subdirs);
            return open;
        }
        DirStream stream(open->fd.get());
        if (!stream.valid())
            cannot_read(path_of(root_, dir.rel), errno);
        StatBatch batch{open, {}};
        while (const dirent* d = stream.next()) {
            batch.names.emplace_back(d->d_name);
            if (batch.names.size() == kBatch)
                hand_out(std::exchange(batch, StatBatch{open, {}}), subdirs);
        }
        if (stream.error() != 0)
            cannot_read(path_of(root_, dir.rel), stream.error());
        if (!batch.names.empty())
            hand_out(std::move(batch), subdirs);
        return open;
    }

    // Under the mutex: true with a batch of a directory nobody is in, or,
    // when another directory can be listed instead, false; a batch of a
    // directory somebody is in only when none can (no more open than
    // threads, none pending).
    bool take_batch(StatBatch& batch)
    {
        if (batches_.empty())
            return false;
        auto alone = std::find_if(batches_.begin(), batches_.end(),
                                  [](const StatBatch& waiting) { return waiting.dir->inside == 0; });
        if (alone == batches_.end()) {
            if (!pending_.empty() && open_dirs_.load() < most_)
                return false;
            alone = batches_.begin();
        }
        batch = std::move(*alone);
        batches_.erase(alone);
        return true;
    }

    // Names of a directory listed before the walk (walk_names), handed out
    // as a listing's are, in batches small enough that every thread gets
    // some: the directory is opened by the thread that took it, as one to
    // list would be, so no more are open than threads.
    void hand_out_listed(const std::shared_ptr<OpenDir>& open, const std::vector<std::string>& names,
                         std::vector<PendingDir>& subdirs)
    {
        const std::size_t per = std::clamp<std::size_t>((names.size() + most_ - 1) / most_, 1, kBatch);
        for (std::size_t first = 0; first < names.size(); first += per) {
            const auto from = names.begin() + static_cast<std::ptrdiff_t>(first);
            const auto to = names.begin() + static_cast<std::ptrdiff_t>(std::min(first + per, names.size()));
            hand_out(StatBatch{open, std::vector<std::string>(from, to)}, subdirs);
        }
    }

    // Queued for any thread; or, when enough batches wait already, stat'ed
    // by the lister itself: the names of a directory of millions of
    // entries are not all held at once, whatever the number of threads.
    void hand_out(StatBatch&& batch, std::vector<PendingDir>& subdirs)
    {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (error_)
                throw Error("walk stopped");  // never shown: the first error is the one rethrown
            if (batches_.size() < max_queued_) {
                batches_.push_back(std::move(batch));
                changed_.notify_one();
                return;
            }
        }
        stat_all(batch, subdirs);
    }

    void stat_all(const StatBatch& batch, std::vector<PendingDir>& subdirs)
    {
        const int fd = batch.dir->fd.get();
        const std::string& rel = batch.dir->rel;
        std::array<float, kBatch> took{};
        std::size_t timed = 0;
        for (const std::string& name : batch.names) {
            if (stopping_)
                return;  // another thread failed: stop early
            const std::string path = rel.empty() ? name : rel + "/" + name;
            struct stat st {};
            const auto start = std::chrono::steady_clock::now();
            if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                cannot_read(path_of(root_, path), errno);
            if (timed < kBatch)
                took[timed++] =
                    std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - start).count();
            visit_(FoundEntry{fd, name.c_str(), path, st});
            g_entries_found.fetch_add(1, std::memory_order_relaxed);
            if (S_ISDIR(st.st_mode))
                subdirs.push_back({path, st.st_dev, st.st_ino, false, {}});
        }
        judge(took.data(), timed);
    }

    // Each stat is timed by itself and a batch judged by its median
    // (slow_by_median): one preempted stat on a busy node does not make a
    // fast tree look slow.
    void judge(float* took, std::size_t count)
    {
        const unsigned now = allowed_.load();
        const bool slow = slow_by_median(now > fast_, took, count, kSlowStatUs);
        const unsigned want = slow ? most_ : fast_;
        if (want == now)
            return;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            allowed_ = want;
        }
        if (want > now)
            gate_.notify_all();
    }

    // The directory's descriptor, opened below the root without following
    // a symlink at its end, and checked to be the directory its parent
    // listed (not one swapped in since, through a symlink further up).
    Fd open_dir(const PendingDir& dir) const
    {
        Fd fd(openat(root_fd_, dir.rel.empty() ? "." : dir.rel.c_str(), kDirFlags));
        if (!fd.valid())
            cannot_read(path_of(root_, dir.rel), errno);
        struct stat st {};
        if (fstat(fd.get(), &st) != 0)
            cannot_read(path_of(root_, dir.rel), errno);
        if (!dir.rel.empty() && (st.st_dev != dir.dev || st.st_ino != dir.ino))
            throw Error(quoted(path_of(root_, dir.rel)) + " changed while being read");
        return fd;
    }

    int root_fd_;
    const std::string& root_;
    const EntryVisitor& visit_;
    const std::size_t max_queued_;  // batches waiting, at most

    const unsigned most_;            // threads in all, that work while stats are slow
    const unsigned fast_;            // threads that work while stats are fast
    std::atomic<unsigned> allowed_;  // threads that may work now
    std::atomic<unsigned> next_index_{0};

    std::mutex mutex_;
    std::condition_variable changed_;
    std::condition_variable gate_;        // threads past allowed_ wait here
    std::atomic<unsigned> open_dirs_{0};  // OpenDirs alive (before batches_: they outlive it)
    std::deque<StatBatch> batches_;
    std::deque<PendingDir> pending_;
    unsigned busy_ = 0;
    bool done_ = false;
    std::atomic<bool> stopping_{false};  // error_ is set: stat no more
    std::exception_ptr error_;
};

// What a dataset's entry is, and whether a dataset can hold it
// (lib/sys/dataset_entry: the one rule).
WalkedEntry dataset_entry(const FoundEntry& found, const std::string& root)
{
    WalkedEntry entry;
    entry.path = found.path;
    entry.st = found.st;
    entry.link_target = check_dataset_entry(found, root);
    return entry;
}
}  // namespace

unsigned walk_threads_for(bool slow, unsigned most, unsigned cpus)
{
    return slow ? most : std::min(most, std::max(2u, cpus));
}

// The walk is the one metadata-heavy pass over the parallel file system
// (one lstat per entry): several threads list different directories and
// stat the entries of one directory at once, as a file system's metadata
// servers serve many requests in parallel.  Pending directories are kept as
// paths, not descriptors, so a tree of a million directories, or one deeper
// than the fd limit, needs no more descriptors than twice the threads (a
// directory and the stream listing it; a path below the root is bounded by
// PATH_MAX: deeper than that, the walk fails with ENAMETOOLONG).
namespace {
void run_walk(int root_fd, const std::string& root, unsigned threads, const EntryVisitor& visit,
              std::deque<PendingDir> start)
{
    Walk walk(root_fd, root, threads, visit, std::move(start));
    run_on_threads(threads, [&] { walk.work(); });
    walk.rethrow();
}
}  // namespace

void walk_tree(int root_fd, const std::string& root, unsigned threads, const EntryVisitor& visit)
{
    run_walk(root_fd, root, threads, visit, {PendingDir{}});
}

void walk_below(int root_fd, const std::string& root, const std::vector<SubtreeStart>& dirs, unsigned threads,
                const EntryVisitor& visit)
{
    std::deque<PendingDir> start;
    for (const SubtreeStart& dir : dirs)
        start.push_back({dir.name, dir.dev, dir.ino, false, {}});
    if (!start.empty())
        run_walk(root_fd, root, threads, visit, std::move(start));
}

void walk_names(int root_fd, const std::string& root, const std::vector<NamesIn>& names, unsigned threads,
                const EntryVisitor& visit)
{
    std::deque<PendingDir> start;
    for (const NamesIn& in : names)
        if (!in.names.empty())
            start.push_back({in.dir, in.dev, in.ino, true, in.names});
    run_walk(root_fd, root, threads, visit, std::move(start));
}

std::uint64_t entries_walked()
{
    return g_entries_found.load(std::memory_order_relaxed);
}

std::vector<WalkedEntry> walk_dataset(const std::string& root, unsigned threads)
{
    const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid())
        cannot_read(root, errno);
    std::vector<WalkedEntry> all;
    std::mutex mutex;
    walk_tree(root_fd.get(), root, threads, [&](const FoundEntry& found) {
        WalkedEntry entry = dataset_entry(found, root);
        const std::lock_guard<std::mutex> lock(mutex);
        all.push_back(std::move(entry));
    });
    // Bytewise, as std::string compares: a parent sorts before its
    // children, and every rank and every run gets the same order.
    std::sort(all.begin(), all.end(), [](const WalkedEntry& a, const WalkedEntry& b) { return a.path < b.path; });
    return all;
}

}  // namespace dlstage
