// How long this rank spent reading the source, writing files, and both at
// once, while it staged one dataset: whether the two overlap.  A staging
// that takes the read time plus the write time (rather than the larger of
// the two) shows here as "both at once" near zero; the job output says it
// for the busiest node (stager/steps/collectives say_transferred).
// Readers and writers mark what they do with an IoScope; any number of
// threads may at once.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

namespace dlstage::stager {

enum class Io { Reading, Writing };

struct IoSeconds {
    double reading = 0;  // some thread was reading (alone or not)
    double writing = 0;  // some thread was writing
    double both = 0;     // some thread read while another wrote
};

class IoActivity {
public:
    using Clock = std::chrono::steady_clock;

    void start(Clock::time_point now = Clock::now());  // forget; nothing in progress
    void begin(Io kind, Clock::time_point now = Clock::now());
    void end(Io kind, Clock::time_point now = Clock::now());
    // What was measured, up to now (an interval still in progress counted).
    IoSeconds seconds(Clock::time_point now = Clock::now());

private:
    void account(Clock::time_point now);  // the interval since last_, to the state it had

    std::mutex mutex_;
    int reading_ = 0, writing_ = 0;
    Clock::time_point last_ = Clock::now();
    IoSeconds seconds_;
};

// Marks one read or one write, begun now and ended when it goes out of
// scope (a throw too).
class IoScope {
public:
    IoScope(IoActivity& activity, Io kind) : activity_(activity), kind_(kind) { activity_.begin(kind_); }
    ~IoScope() { activity_.end(kind_); }
    IoScope(const IoScope&) = delete;
    IoScope& operator=(const IoScope&) = delete;

private:
    IoActivity& activity_;
    Io kind_;
};

// The stager stages one dataset at a time: this process's one measure,
// started with its phases (stager/stage_dataset).
IoActivity& stage_io();

// "reading 89.10 s, writing 57.70 s, both at once 0.40 s".
std::string io_text(const IoSeconds& seconds);

}  // namespace dlstage::stager
