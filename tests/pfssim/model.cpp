// pfssim's clock, shared state, --faults control file and --stats writer
// (see model.hpp).
#include "tests/pfssim/model.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace pfssim {

int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t sleep_until(int64_t t_ns)
{
    int64_t start = now_ns();
    if (t_ns <= start)
        return 0;
    timespec ts;
    ts.tv_sec = t_ns / 1000000000;
    ts.tv_nsec = t_ns % 1000000000;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    return now_ns() - start;
}

Config g_cfg;
int g_root_fd = -1;
Bucket g_global_bucket;
MetaSlots g_meta;
Stats g_stats;
Faults g_faults;

namespace {
std::mutex g_stats_write_mutex;
}  // namespace

void atomic_max(std::atomic<uint64_t>& a, uint64_t v)
{
    uint64_t cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
}
void atomic_max(std::atomic<int64_t>& a, int64_t v)
{
    int64_t cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
}

// ------------------------------------------------------------- faults ----

namespace {

constexpr int64_t fault_check_interval_ns = 100 * 1000000LL;
constexpr size_t fault_file_max = 64 * 1024;  // a control file is a few lines

std::string trim(const std::string& s)
{
    const char* ws = " \t\r";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos)
        return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The file's content, at most fault_file_max bytes; "" when it cannot be
// read (it may have just been removed).
std::string read_small_file(const std::string& path)
{
    std::string out;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return out;
    char buf[4096];
    while (out.size() < fault_file_max) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        out.append(buf, size_t(n));
    }
    close(fd);
    return out;
}

// key=value lines, '#' comments; unknown keys and lines without '=' are
// ignored, a bad value leaves its key as it was (absent: 0).  The file is a switch flipped
// by hand or by a test script, so it must never take pfssim down.
FaultState parse_faults(const std::string& path, const std::string& content)
{
    FaultState f;
    size_t pos = 0;
    while (pos < content.size()) {
        size_t eol = content.find('\n', pos);
        if (eol == std::string::npos)
            eol = content.size();
        std::string line = content.substr(pos, eol - pos);
        pos = eol + 1;
        line = trim(line.substr(0, line.find('#')));  // '#' starts a comment
        size_t eq = line.find('=');
        if (eq == std::string::npos)
            continue;
        std::string key = trim(line.substr(0, eq));
        std::string value = trim(line.substr(eq + 1));
        int* target = nullptr;
        // An errno must reach the reader as itself: libfuse turns values
        // from 1000 up into ERANGE, the kernel refuses 512 up (its own
        // restart codes).  ENOSYS from open would make the kernel stop
        // sending opens for good, and reads would then come without our
        // file handle.
        long hi = 511;
        if (key == "read_errno") {
            target = &f.read_errno;
        } else if (key == "open_errno") {
            target = &f.open_errno;
        } else if (key == "extra_latency_ms") {
            target = &f.extra_latency_ms;
            hi = 3600 * 1000;
        } else {
            continue;
        }
        char* end = nullptr;
        errno = 0;
        long v = std::strtol(value.c_str(), &end, 10);
        if (errno || value.empty() || *end != '\0' || v < 0 || v > hi || (target == &f.open_errno && v == ENOSYS)) {
            std::fprintf(stderr, "pfssim: faults file %s: ignoring %s=%s (want 0-%ld%s)\n", path.c_str(), key.c_str(),
                         value.c_str(), hi, target == &f.open_errno ? ", not ENOSYS" : "");
            continue;
        }
        *target = int(v);
    }
    return f;
}

}  // namespace

FaultState Faults::poll()
{
    if (!path_.empty()) {
        int64_t now = now_ns();
        if (now >= next_check_ns_.load(std::memory_order_relaxed) && reload_mutex_.try_lock()) {
            // Re-check under the lock: another caller may have just reloaded.
            if (now >= next_check_ns_.load(std::memory_order_relaxed)) {
                next_check_ns_.store(now + fault_check_interval_ns, std::memory_order_relaxed);
                reload();
            }
            reload_mutex_.unlock();
        }
    }
    FaultState f;
    f.read_errno = read_errno_.load(std::memory_order_relaxed);
    f.open_errno = open_errno_.load(std::memory_order_relaxed);
    f.extra_latency_ms = extra_latency_ms_.load(std::memory_order_relaxed);
    return f;
}

void Faults::reload()
{
    Signature sig;
    struct stat st;
    if (stat(path_.c_str(), &st) == 0) {
        sig.exists = true;
        sig.dev = uint64_t(st.st_dev);
        sig.ino = uint64_t(st.st_ino);
        sig.size = int64_t(st.st_size);
        sig.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
        sig.ctime_ns = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    }
    if (sig == sig_ && !racy_)
        return;
    sig_ = sig;
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    racy_ = sig.exists && int64_t(wall.tv_sec) * 1000000000 + wall.tv_nsec - sig.ctime_ns < 1000000000;
    // Missing or unreadable: no faults.
    std::string content = sig.exists ? read_small_file(path_) : std::string();
    if (content == content_)
        return;
    content_ = content;
    FaultState f = parse_faults(path_, content);
    read_errno_.store(f.read_errno, std::memory_order_relaxed);
    open_errno_.store(f.open_errno, std::memory_order_relaxed);
    extra_latency_ms_.store(f.extra_latency_ms, std::memory_order_relaxed);
    // The log of a soak run says when each fault started and ended.
    std::fprintf(stderr, "pfssim: faults now read_errno=%d open_errno=%d extra_latency_ms=%d (%s)\n", f.read_errno,
                 f.open_errno, f.extra_latency_ms, path_.c_str());
}

// -------------------------------------------------------------- stats ----

bool write_stats(bool final_dump)
{
    if (g_cfg.stats.empty())
        return true;
    std::lock_guard<std::mutex> lk(g_stats_write_mutex);
    uint64_t seq = ++g_stats.dumps;
    double elapsed = double(now_ns() - g_stats.start_ns) / 1e9;
    uint64_t calls = g_stats.read_calls.load();
    std::string tmp = g_cfg.stats + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "w");
    bool renamed = true;
    if (!f) {
        renamed = false;
        f = std::fopen(g_cfg.stats.c_str(), "w");
        if (!f)
            return false;
    }
    std::fprintf(f, "backing=%s\n", g_cfg.backing.c_str());
    std::fprintf(f, "mountpoint=%s\n", g_cfg.mountpoint.c_str());
    std::fprintf(f, "bandwidth_mbps=%g\n", g_cfg.bandwidth_mbps);
    std::fprintf(f, "stream_bandwidth_mbps=%g\n", g_cfg.stream_bandwidth_mbps);
    std::fprintf(f, "meta_latency_ms=%g\n", g_cfg.meta_latency_ms);
    std::fprintf(f, "meta_slots=%d\n", g_cfg.meta_slots);
    std::fprintf(f, "burst_bytes=%lld\n", (long long)g_cfg.burst_bytes);
    std::fprintf(f, "direct_io=%d\n", g_cfg.direct_io ? 1 : 0);
    std::fprintf(f, "entry_timeout_s=%g\n", g_cfg.entry_timeout);
    std::fprintf(f, "attr_timeout_s=%g\n", g_cfg.attr_timeout);
    std::fprintf(f, "faults=%s\n", g_cfg.faults.empty() ? "-" : g_cfg.faults.c_str());
    std::fprintf(f, "elapsed_s=%.6f\n", elapsed);
    std::fprintf(f, "bytes_read=%llu\n", (unsigned long long)g_stats.bytes_read.load());
    std::fprintf(f, "bytes_requested=%llu\n", (unsigned long long)g_stats.bytes_requested.load());
    std::fprintf(f, "read_calls=%llu\n", (unsigned long long)calls);
    std::fprintf(f, "read_req_max_bytes=%llu\n", (unsigned long long)g_stats.read_req_max.load());
    std::fprintf(f, "read_req_mean_bytes=%llu\n",
                 (unsigned long long)(calls ? g_stats.bytes_requested.load() / calls : 0));
    std::fprintf(f, "read_throttle_s=%.6f\n", double(g_stats.read_throttle_ns.load()) / 1e9);
    std::fprintf(f, "opens=%llu\n", (unsigned long long)g_stats.opens.load());
    std::fprintf(f, "releases=%llu\n", (unsigned long long)g_stats.releases.load());
    std::fprintf(f, "open_handles_max=%lld\n", (long long)g_stats.open_handles_max.load());
    std::fprintf(f, "opendirs=%llu\n", (unsigned long long)g_stats.opendirs.load());
    std::fprintf(f, "readdirs=%llu\n", (unsigned long long)g_stats.readdirs.load());
    std::fprintf(f, "getattrs=%llu\n", (unsigned long long)g_stats.getattrs.load());
    std::fprintf(f, "readlinks=%llu\n", (unsigned long long)g_stats.readlinks.load());
    std::fprintf(f, "meta_ops=%llu\n", (unsigned long long)g_stats.meta_ops.load());
    std::fprintf(f, "meta_queue_s=%.6f\n", double(g_stats.meta_queue_ns.load()) / 1e9);
    std::fprintf(f, "erofs=%llu\n", (unsigned long long)g_stats.erofs.load());
    std::fprintf(f, "errors=%llu\n", (unsigned long long)g_stats.errors.load());
    std::fprintf(f, "fault_reads=%llu\n", (unsigned long long)g_stats.fault_reads.load());
    std::fprintf(f, "fault_opens=%llu\n", (unsigned long long)g_stats.fault_opens.load());
    std::fprintf(f, "fault_delays=%llu\n", (unsigned long long)g_stats.fault_delays.load());
    std::fprintf(f, "final=%d\n", final_dump ? 1 : 0);
    std::fprintf(f, "dump=%llu\n", (unsigned long long)seq);
    bool ok = std::fflush(f) == 0;
    ok = (std::fclose(f) == 0) && ok;
    if (renamed) {
        if (!ok || std::rename(tmp.c_str(), g_cfg.stats.c_str()) != 0) {
            unlink(tmp.c_str());
            return false;
        }
    }
    return ok;
}

}  // namespace pfssim
