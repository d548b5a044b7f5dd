// pfssim's clock, shared state and --stats writer (see model.hpp).
#include "tests/pfssim/model.hpp"

#include <cerrno>
#include <cstdio>

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
