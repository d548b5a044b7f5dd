// A directory source planned in segments while the first ones are already
// staged: the walk on rank 0, on a thread of its own, overlaps the
// transfer instead of coming before it (on a parallel file system a walk of
// a million files is a stat per file through a few metadata servers:
// minutes before the first byte moves).
//
// The tree is cut at its top: the root's entries, or when it holds fewer
// than kMinUnits directories, the entries of the levels below it until a
// level holds that many (imagenet/ with train/ and val/ is cut below them),
// or kMaxCutDepth levels down.  Each directory of the level reached is a
// unit: it and everything below it.  When the levels run out first (the
// last one holds files only, as one directory of 1,600 images does), there
// are no units.  The first segment holds the directories the cut went
// through, the next ones their files, in slices (listed once, each slice
// stat'ed while the one before is read: one large directory's files are
// not all stat'ed before its first open), then each later one whole units,
// in path order.
// Slices and units alike come more of them each time (the first transfer
// starts early, the later ones are large enough to keep the ring busy), but
// no more than the walk gets through in half a second (a tenth of one into
// a shared tier: stager/steps/segment_transfer), and the walk stays
// at most one segment ahead of the transfer: each file is opened soon after
// its stat, while the file system still caches what the stat looked up
// (through pfssim, whose caches last a second, a walk far ahead made each
// open look the file up again: three metadata calls per file, not two).
// Every directory of a later segment is complete within it; those of the
// first are complete only at the end (their files and units come later),
// so the first segment's directories get their modes and times last.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "config/config.hpp"
#include "dataset/entry_list.hpp"

namespace dlstage::stager {

// Directories the cut looks for at one level before it stops going down.
constexpr std::size_t kMinUnits = 16;
// A later segment closes at this many entries or bytes, whichever first;
// it holds no more units than the walk went through in `seconds` so far.
struct SegmentLimits {
    std::size_t entries = 131072;
    std::uint64_t bytes = 1ull << 30;
    double seconds = 0.5;
};

class SegmentedWalk {
public:
    // Starts walking dataset.source (a directory) as the calling user.
    SegmentedWalk(const Dataset& dataset, unsigned walk_threads, SegmentLimits limits = {});
    ~SegmentedWalk();  // stops the walk after the slice or units it is walking
    SegmentedWalk(const SegmentedWalk&) = delete;
    SegmentedWalk& operator=(const SegmentedWalk&) = delete;

    // The next segment, sorted by path, waiting for the walk; false at the
    // end.  Rethrows what the walk threw (Error naming the entry).
    bool next(EntryList& segment);
    // next() without waiting: NotYet while the walk is still on it.
    enum class Next { Segment, NotYet, End };
    Next try_next(EntryList& segment);

private:
    using UnitWalker = std::function<void(std::size_t first, std::size_t count, EntryList& segment)>;
    void run();
    void walk();
    bool segments_of(std::size_t total, std::size_t first_count, const UnitWalker& walk_units);
    void push(EntryList&& segment);
    bool wait_for_room();  // false when stopped

    const Dataset dataset_;
    const unsigned threads_;
    const SegmentLimits limits_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable room_;  // a segment was taken
    std::deque<EntryList> segments_;
    bool done_ = false;
    bool stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;  // last: started once the rest is in place
};

}  // namespace dlstage::stager
