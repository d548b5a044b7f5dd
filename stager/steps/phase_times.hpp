// How long each phase of staging one dataset took on this rank, for the
// line rank 0 says after the summary (stager/steps/collectives say_transferred):
// where the time of a slow staging went, without a profiler.  There is no
// "verify" phase: chunks are checked as they arrive (transfer) and each
// file's size as it is finished (transfer, finish).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string>

namespace dlstage::stager {

enum class Phase : std::size_t {
    Plan,      // the walk or the manifest, and its broadcast
    Check,     // a manifest's plan against the source, file by file
    Prepare,   // space, leftovers, locks: up to the transfer
    Skeleton,  // directories and empty files
    Transfer,  // read, exchange, write the files
    Finish,    // symlinks, directories' modes and times
    Extract,   // unpacking archives
    Publish,   // into place, with the contents list and records
    Count
};
constexpr std::size_t kPhaseCount = static_cast<std::size_t>(Phase::Count);
using PhaseSeconds = std::array<double, kPhaseCount>;

class PhaseTimes {
public:
    void start();           // forget what was measured; the clock starts now
    void lap(Phase phase);  // the time since the last lap (or start) goes to phase
    const PhaseSeconds& seconds() const { return seconds_; }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    PhaseSeconds seconds_{};
};

// The stager stages one dataset at a time: the one clock of this process.
PhaseTimes& stage_phases();

// "plan 1.20 s, check 0.00 s, ..., publish 0.01 s": every phase, in order,
// a phase this way of staging has not as 0.00 s (the same words every time,
// for scripts and the docs' examples).
std::string phases_text(const PhaseSeconds& seconds);

}  // namespace dlstage::stager
