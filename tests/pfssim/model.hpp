// pfssim's model of a shared parallel file system, as one client machine
// sees it: an aggregate read bandwidth (one token bucket shared by every
// reader), a per-stream cap (a bucket per open file handle), and metadata
// operations served by a few slots with a fixed latency each.  Also the
// parameters (Config), the counters written to --stats (Stats) and the
// faults a control file switches on (Faults).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace pfssim {

int64_t now_ns();
// Sleep until an absolute CLOCK_MONOTONIC time; returns nanoseconds slept.
int64_t sleep_until(int64_t t_ns);

struct Config {
    std::string backing;                 // absolute path
    std::string mountpoint;              // as given (libfuse resolves it)
    std::string stats;                   // absolute path or empty
    std::string faults;                  // --faults control file: absolute path or empty
    double bandwidth_mbps = 300;         // aggregate, 1 MB = 1e6 bytes; 0 = unlimited
    double stream_bandwidth_mbps = 100;  // per open file handle; 0 = unlimited
    double meta_latency_ms = 1;
    int meta_slots = 4;
    int64_t burst_bytes = 1 << 20;
    double attr_timeout = 0;   // kernel attribute cache, seconds
    double entry_timeout = 0;  // kernel name (dentry) cache, seconds
    unsigned max_read = 1 << 20;
    unsigned max_threads = 64;
    long read_ahead_kb = 1024;  // kernel readahead for the mount; -1 = leave
    bool direct_io = false;     // opt-in: no page cache, breaks MAP_SHARED mmap
};

extern Config g_cfg;
extern int g_root_fd;  // the backing directory; every operation resolves paths below it

// --------------------------------------------------------- token bucket ----
//
// Time-based reservation (GCRA).  `tat` is the time at which everything
// reserved so far has been paid for at `rate`.  A request for n bytes
// advances tat by n/rate and may proceed once tat - tolerance <= now, where
// the tolerance is the burst size expressed in time.  Hence over any
// interval of length T at most rate*T + burst bytes pass: exact over long
// runs, and one mutex acquisition per read.

class Bucket {
public:
    void configure(double bytes_per_s, int64_t burst_bytes)
    {
        std::lock_guard<std::mutex> lk(m_);
        if (bytes_per_s <= 0) {
            ns_per_byte_ = 0;
            return;
        }
        ns_per_byte_ = 1e9 / bytes_per_s;
        tolerance_ns_ = int64_t(double(burst_bytes) * ns_per_byte_);
        tat_ns_ = 0;
        frac_ = 0;
    }

    // Reserve n bytes arriving at `now`; returns the time the caller may
    // proceed (<= now means immediately).
    int64_t reserve(int64_t now, int64_t n)
    {
        std::lock_guard<std::mutex> lk(m_);
        if (ns_per_byte_ == 0)
            return now;
        if (tat_ns_ < now) {
            tat_ns_ = now;
            frac_ = 0;
        }
        double cost = double(n) * ns_per_byte_ + frac_;
        int64_t whole = int64_t(cost);
        frac_ = cost - double(whole);
        tat_ns_ += whole;
        return tat_ns_ - tolerance_ns_;
    }

private:
    std::mutex m_;
    double ns_per_byte_ = 0;
    double frac_ = 0;  // carried sub-nanosecond remainder: keeps accounting exact
    int64_t tolerance_ns_ = 0;
    int64_t tat_ns_ = 0;
};

extern Bucket g_global_bucket;

// ------------------------------------------------------ metadata slots ----
//
// N servers, each busy for `latency` per operation.  An operation takes the
// server that frees up first, starts at max(now, free_at) and completes
// latency later; the caller sleeps until completion.  FIFO by arrival,
// independent of how the kernel schedules our threads.

class MetaSlots {
public:
    void configure(int slots, double latency_ms)
    {
        free_at_.assign(size_t(std::max(slots, 1)), 0);
        latency_ns_ = int64_t(latency_ms * 1e6);
    }
    // Returns the completion time of an operation arriving at `now`.
    int64_t reserve(int64_t now)
    {
        if (latency_ns_ <= 0)
            return now;
        std::lock_guard<std::mutex> lk(m_);
        auto it = std::min_element(free_at_.begin(), free_at_.end());
        int64_t start = std::max(now, *it);
        *it = start + latency_ns_;
        return *it;
    }
    int64_t latency_ns() const { return latency_ns_; }

private:
    std::mutex m_;
    std::vector<int64_t> free_at_;
    int64_t latency_ns_ = 0;
};

extern MetaSlots g_meta;

// -------------------------------------------------------------- faults ----
//
// A soak test makes the data set source fail or go slow for a while, on
// every node at once: all pfssim instances share one control file on the
// host, and each re-reads it when it changes.  The operations ask for the
// faults in force (poll), so no thread of our own is needed.

struct FaultState {
    int read_errno = 0;        // every read of file content fails with it
    int open_errno = 0;        // every open of a file fails with it
    int extra_latency_ms = 0;  // added to every read and metadata operation
};

class Faults {
public:
    void configure(const std::string& path) { path_ = path; }
    // The faults in force.  At most every 100 ms one caller stats the
    // control file and, if it changed, re-reads it before it answers; the
    // others meanwhile get the state as it was, so a slow stat holds up one
    // operation, not all.
    FaultState poll();

private:
    // What stat says of the control file; a change means it was rewritten.
    struct Signature {
        bool exists = false;
        uint64_t dev = 0, ino = 0;
        int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
        bool operator==(const Signature& o) const
        {
            return exists == o.exists && dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns &&
                   ctime_ns == o.ctime_ns;
        }
    };
    void reload();  // with reload_mutex_ held

    std::string path_;
    std::atomic<int64_t> next_check_ns_{0};
    std::mutex reload_mutex_;  // guards sig_, racy_, content_
    Signature sig_;
    // Changed less than a second ago: a rewrite of the same size within the
    // same timestamp tick would leave the signature alone, so read it again.
    bool racy_ = false;
    std::string content_;
    std::atomic<int> read_errno_{0};
    std::atomic<int> open_errno_{0};
    std::atomic<int> extra_latency_ms_{0};
};

extern Faults g_faults;

// --------------------------------------------------------------- stats ----

struct Stats {
    std::atomic<uint64_t> bytes_read{0};
    std::atomic<uint64_t> bytes_requested{0};
    std::atomic<uint64_t> read_calls{0};
    std::atomic<uint64_t> read_req_max{0};
    std::atomic<uint64_t> read_throttle_ns{0};
    std::atomic<uint64_t> opens{0};
    std::atomic<uint64_t> releases{0};
    std::atomic<uint64_t> opendirs{0};
    std::atomic<uint64_t> readdirs{0};
    std::atomic<uint64_t> getattrs{0};
    std::atomic<uint64_t> readlinks{0};
    std::atomic<uint64_t> meta_ops{0};
    std::atomic<uint64_t> meta_queue_ns{0};  // time waited beyond the latency
    std::atomic<uint64_t> erofs{0};
    std::atomic<uint64_t> errors{0};  // the backing file system's; injected faults are not errors
    std::atomic<uint64_t> fault_reads{0};
    std::atomic<uint64_t> fault_opens{0};
    std::atomic<uint64_t> fault_delays{0};
    std::atomic<int64_t> open_handles{0};
    std::atomic<int64_t> open_handles_max{0};
    std::atomic<uint64_t> dumps{0};
    int64_t start_ns = 0;
};

extern Stats g_stats;

void atomic_max(std::atomic<uint64_t>& a, uint64_t v);
void atomic_max(std::atomic<int64_t>& a, int64_t v);

// Writes the parameters and counters to --stats FILE (if given), replacing
// it atomically; false if it could not be written.
bool write_stats(bool final_dump);

}  // namespace pfssim
