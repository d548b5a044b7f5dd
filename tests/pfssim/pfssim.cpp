// pfssim — a read-only FUSE file system that serves a backing directory the
// way a shared parallel file system would look to one client machine:
//
//   * an aggregate read bandwidth shared by every reader (token bucket),
//   * a per-stream cap: every open file handle has its own token bucket,
//   * a fixed latency per metadata operation, served by a small pool of
//     metadata "slots" (at most N operations in service at once, further
//     operations queue), modelling a metadata server.
//
// It exists so benchmarks on a single machine can show why reading a data
// set once with many readers beats N nodes each copying it.  See README.md.
//
// Build (libfuse 3.12 or newer):
//   g++ -std=c++17 -O2 -Wall -Wextra -pthread $(pkg-config --cflags fuse3)
//       -o pfssim pfssim.cpp $(pkg-config --libs fuse3)

#define FUSE_USE_VERSION 312

#include <fuse.h>
#include <fuse_lowlevel.h>  // fuse_parse_cmdline

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

namespace {

// ---------------------------------------------------------------- time ----

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Sleep until an absolute CLOCK_MONOTONIC time; returns nanoseconds slept.
int64_t sleep_until(int64_t t_ns) {
    int64_t start = now_ns();
    if (t_ns <= start) return 0;
    timespec ts;
    ts.tv_sec = t_ns / 1000000000;
    ts.tv_nsec = t_ns % 1000000000;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
    return now_ns() - start;
}

// -------------------------------------------------------------- config ----

struct Config {
    std::string backing;       // absolute path
    std::string mountpoint;    // as given (libfuse resolves it)
    std::string stats;         // absolute path or empty
    double bandwidth_mbps = 300;         // aggregate, 1 MB = 1e6 bytes; 0 = unlimited
    double stream_bandwidth_mbps = 100;  // per open file handle; 0 = unlimited
    double meta_latency_ms = 1;
    int meta_slots = 4;
    int64_t burst_bytes = 1 << 20;
    double attr_timeout = 0;             // kernel attribute cache, seconds
    double entry_timeout = 0;            // kernel name (dentry) cache, seconds
    unsigned max_read = 1 << 20;
    unsigned max_threads = 64;
    long read_ahead_kb = 1024;           // kernel readahead for the mount; -1 = leave
    bool direct_io = false;              // opt-in: no page cache, breaks MAP_SHARED mmap
};

Config g_cfg;
int g_root_fd = -1;

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
    void configure(double bytes_per_s, int64_t burst_bytes) {
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
    int64_t reserve(int64_t now, int64_t n) {
        std::lock_guard<std::mutex> lk(m_);
        if (ns_per_byte_ == 0) return now;
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

Bucket g_global_bucket;

// ------------------------------------------------------ metadata slots ----
//
// N servers, each busy for `latency` per operation.  An operation takes the
// server that frees up first, starts at max(now, free_at) and completes
// latency later; the caller sleeps until completion.  FIFO by arrival,
// independent of how the kernel schedules our threads.

class MetaSlots {
public:
    void configure(int slots, double latency_ms) {
        free_at_.assign(size_t(std::max(slots, 1)), 0);
        latency_ns_ = int64_t(latency_ms * 1e6);
    }
    // Returns the completion time of an operation arriving at `now`.
    int64_t reserve(int64_t now) {
        if (latency_ns_ <= 0) return now;
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

MetaSlots g_meta;

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
    std::atomic<uint64_t> errors{0};
    std::atomic<int64_t> open_handles{0};
    std::atomic<int64_t> open_handles_max{0};
    std::atomic<uint64_t> dumps{0};
    int64_t start_ns = 0;
};

Stats g_stats;
std::mutex g_stats_write_mutex;

void atomic_max(std::atomic<uint64_t>& a, uint64_t v) {
    uint64_t cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
}
void atomic_max(std::atomic<int64_t>& a, int64_t v) {
    int64_t cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
}

bool write_stats(bool final_dump) {
    if (g_cfg.stats.empty()) return true;
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
        if (!f) return false;
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
    std::fprintf(f, "bytes_requested=%llu\n",
                 (unsigned long long)g_stats.bytes_requested.load());
    std::fprintf(f, "read_calls=%llu\n", (unsigned long long)calls);
    std::fprintf(f, "read_req_max_bytes=%llu\n",
                 (unsigned long long)g_stats.read_req_max.load());
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

// --------------------------------------------------------------- model ----

void set_read_ahead();
extern std::once_flag g_read_ahead_once;

// One metadata operation: wait for a slot, hold it for the latency.
class MetaOp {
public:
    explicit MetaOp(std::atomic<uint64_t>& counter) {
        std::call_once(g_read_ahead_once, set_read_ahead);
        counter.fetch_add(1, std::memory_order_relaxed);
        g_stats.meta_ops.fetch_add(1, std::memory_order_relaxed);
        arrival_ = now_ns();
        done_ = g_meta.reserve(arrival_);
    }
    ~MetaOp() {
        sleep_until(done_);
        int64_t queued = done_ - arrival_ - g_meta.latency_ns();
        if (queued > 0) g_stats.meta_queue_ns.fetch_add(uint64_t(queued), std::memory_order_relaxed);
    }
    MetaOp(const MetaOp&) = delete;
    MetaOp& operator=(const MetaOp&) = delete;

private:
    int64_t arrival_;
    int64_t done_;
};

struct FileHandle {
    int fd = -1;
    Bucket stream;
};

struct DirHandle {
    DIR* dir = nullptr;
    off_t offset = 0;
};

// Paths from libfuse start with '/'; make them relative to the backing fd.
const char* rel(const char* path) {
    if (path == nullptr || path[0] == '\0') return ".";
    while (*path == '/') ++path;
    return *path ? path : ".";
}

int fail(int err) {
    g_stats.errors.fetch_add(1, std::memory_order_relaxed);
    return -err;
}

// ---------------------------------------------------------- operations ----

void* op_init(fuse_conn_info* conn, fuse_config* cfg) {
    // Each open must re-read from the "PFS": no data-cache revalidation
    // through GETATTR on every read (auto_inval_data would turn each read
    // into an extra metadata op with attr_timeout=0), no kernel_cache.
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
    // The kernel's default of 12 background (readahead) requests, congested
    // at 9, starves some streams once ~5 readers each keep two reads in
    // flight: they lose their readahead and get a smaller share.
    conn->max_background = 128;
    conn->congestion_threshold = 96;
    if (g_cfg.max_read && (conn->max_read == 0 || conn->max_read > g_cfg.max_read))
        conn->max_read = g_cfg.max_read;
    cfg->use_ino = 1;
    cfg->nullpath_ok = 1;
    cfg->entry_timeout = g_cfg.entry_timeout;
    cfg->attr_timeout = g_cfg.attr_timeout;
    cfg->negative_timeout = g_cfg.entry_timeout;
    cfg->kernel_cache = 0;
    cfg->auto_cache = 0;
    cfg->direct_io = 0;
    return nullptr;
}

int op_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
    MetaOp m(g_stats.getattrs);
    int r;
    if (fi != nullptr && fi->fh != 0) {
        // The kernel passes a handle only for open regular files (fstat).
        r = fstat(reinterpret_cast<FileHandle*>(fi->fh)->fd, st);
    } else {
        r = fstatat(g_root_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
    }
    return r == 0 ? 0 : fail(errno);
}

int op_readlink(const char* path, char* buf, size_t size) {
    MetaOp m(g_stats.readlinks);
    if (size == 0) return -EINVAL;
    ssize_t n = readlinkat(g_root_fd, rel(path), buf, size - 1);
    if (n < 0) return fail(errno);
    buf[n] = '\0';
    return 0;
}

int op_open(const char* path, fuse_file_info* fi) {
    MetaOp m(g_stats.opens);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
        return -EROFS;
    }
    int fd = openat(g_root_fd, rel(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return fail(errno);
    auto* h = new FileHandle;
    h->fd = fd;
    h->stream.configure(g_cfg.stream_bandwidth_mbps * 1e6, g_cfg.burst_bytes);
    fi->fh = reinterpret_cast<uint64_t>(h);
    fi->keep_cache = 0;  // invalidate this inode's page cache on every open
    // Default: no direct_io, so MAP_SHARED mmap works (sbcast mmaps its
    // source; with direct_io the kernel refuses it with ENODEV).  The price
    // is that concurrent readers of one file share page-cache pages.
    fi->direct_io = g_cfg.direct_io ? 1 : 0;
    atomic_max(g_stats.open_handles_max, ++g_stats.open_handles);
    return 0;
}

int op_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
    auto* h = reinterpret_cast<FileHandle*>(fi->fh);
    g_stats.read_calls.fetch_add(1, std::memory_order_relaxed);
    g_stats.bytes_requested.fetch_add(size, std::memory_order_relaxed);
    atomic_max(g_stats.read_req_max, uint64_t(size));
    size_t got = 0;
    while (got < size) {
        ssize_t n = pread(h->fd, buf + got, size - got, off + off_t(got));
        if (n < 0) {
            if (errno == EINTR) continue;
            if (got == 0) return fail(errno);
            break;
        }
        if (n == 0) break;
        got += size_t(n);
    }
    if (got > 0) {
        // Pay for the bytes actually delivered: first this stream's own
        // bucket, then (once the stream may go) the shared one.
        int64_t t0 = now_ns();
        int64_t ready = h->stream.reserve(t0, int64_t(got));
        sleep_until(ready);
        int64_t t1 = std::max(ready, now_ns());
        ready = g_global_bucket.reserve(t1, int64_t(got));
        sleep_until(ready);
        g_stats.read_throttle_ns.fetch_add(uint64_t(std::max<int64_t>(0, now_ns() - t0)),
                                           std::memory_order_relaxed);
        g_stats.bytes_read.fetch_add(got, std::memory_order_relaxed);
    }
    return int(got);
}

int op_release(const char*, fuse_file_info* fi) {
    auto* h = reinterpret_cast<FileHandle*>(fi->fh);
    if (h) {
        close(h->fd);
        delete h;
        --g_stats.open_handles;
        g_stats.releases.fetch_add(1, std::memory_order_relaxed);
    }
    return 0;
}

int op_opendir(const char* path, fuse_file_info* fi) {
    MetaOp m(g_stats.opendirs);
    int fd = openat(g_root_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(errno);
    DIR* d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return fail(e);
    }
    auto* h = new DirHandle;
    h->dir = d;
    fi->fh = reinterpret_cast<uint64_t>(h);
    return 0;
}

int op_readdir(const char*, void* buf, fuse_fill_dir_t filler, off_t offset,
               fuse_file_info* fi, fuse_readdir_flags) {
    MetaOp m(g_stats.readdirs);
    auto* h = reinterpret_cast<DirHandle*>(fi->fh);
    if (offset != h->offset) {
        seekdir(h->dir, offset);
        h->offset = offset;
    }
    for (;;) {
        errno = 0;
        dirent* e = readdir(h->dir);
        if (!e) {
            if (errno) return fail(errno);
            break;
        }
        struct stat st;
        std::memset(&st, 0, sizeof st);
        st.st_ino = e->d_ino;
        st.st_mode = mode_t(e->d_type) << 12;
        off_t next = telldir(h->dir);
        if (filler(buf, e->d_name, &st, next, fuse_fill_dir_flags(0))) break;
        h->offset = next;
    }
    return 0;
}

int op_releasedir(const char*, fuse_file_info* fi) {
    auto* h = reinterpret_cast<DirHandle*>(fi->fh);
    if (h) {
        closedir(h->dir);
        delete h;
    }
    return 0;
}

int op_statfs(const char*, struct statvfs* sv) {
    return fstatvfs(g_root_fd, sv) == 0 ? 0 : fail(errno);
}

int op_access(const char* path, int mask) {
    // Only reached without default_permissions; we always set it, but be
    // correct anyway.
    if (mask & W_OK) {
        g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
        return -EROFS;
    }
    return faccessat(g_root_fd, rel(path), mask, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

int erofs() {
    g_stats.erofs.fetch_add(1, std::memory_order_relaxed);
    return -EROFS;
}
int op_mknod(const char*, mode_t, dev_t) { return erofs(); }
int op_mkdir(const char*, mode_t) { return erofs(); }
int op_unlink(const char*) { return erofs(); }
int op_rmdir(const char*) { return erofs(); }
int op_symlink(const char*, const char*) { return erofs(); }
int op_rename(const char*, const char*, unsigned int) { return erofs(); }
int op_link(const char*, const char*) { return erofs(); }
int op_chmod(const char*, mode_t, fuse_file_info*) { return erofs(); }
int op_chown(const char*, uid_t, gid_t, fuse_file_info*) { return erofs(); }
int op_truncate(const char*, off_t, fuse_file_info*) { return erofs(); }
int op_write(const char*, const char*, size_t, off_t, fuse_file_info*) { return erofs(); }
int op_create(const char*, mode_t, fuse_file_info*) { return erofs(); }
int op_utimens(const char*, const timespec*, fuse_file_info*) { return erofs(); }
int op_setxattr(const char*, const char*, const char*, size_t, int) { return erofs(); }
int op_removexattr(const char*, const char*) { return erofs(); }
int op_fallocate(const char*, int, off_t, off_t, fuse_file_info*) { return erofs(); }

fuse_operations make_ops() {
    fuse_operations ops;
    std::memset(&ops, 0, sizeof ops);
    ops.init = op_init;
    ops.getattr = op_getattr;
    ops.readlink = op_readlink;
    ops.open = op_open;
    ops.read = op_read;
    ops.release = op_release;
    ops.opendir = op_opendir;
    ops.readdir = op_readdir;
    ops.releasedir = op_releasedir;
    ops.statfs = op_statfs;
    ops.access = op_access;
    ops.mknod = op_mknod;
    ops.mkdir = op_mkdir;
    ops.unlink = op_unlink;
    ops.rmdir = op_rmdir;
    ops.symlink = op_symlink;
    ops.rename = op_rename;
    ops.link = op_link;
    ops.chmod = op_chmod;
    ops.chown = op_chown;
    ops.truncate = op_truncate;
    ops.write = op_write;
    ops.create = op_create;
    ops.utimens = op_utimens;
    ops.setxattr = op_setxattr;
    ops.removexattr = op_removexattr;
    ops.fallocate = op_fallocate;
    return ops;
}

// ---------------------------------------------------------- command line ----

void usage(FILE* out) {
    std::fprintf(out,
        "usage: pfssim BACKING_DIR MOUNTPOINT [options] [FUSE options]\n"
        "\n"
        "Serve BACKING_DIR read-only at MOUNTPOINT, throttled like a shared\n"
        "parallel file system (1 MB = 10^6 bytes).\n"
        "\n"
        "  --bandwidth MB/s          aggregate read bandwidth (default 300; 0 = unlimited)\n"
        "  --stream-bandwidth MB/s   per open file handle cap (default 100; 0 = unlimited)\n"
        "  --meta-latency-ms MS      latency per metadata operation (default 1)\n"
        "  --meta-slots N            metadata operations in service at once (default 4)\n"
        "  --burst BYTES             token bucket depth (default 1048576)\n"
        "  --entry-timeout S         kernel name (dentry) cache timeout (default 0: every\n"
        "                            path component of every path walk is a LOOKUP)\n"
        "  --attr-timeout S          kernel attribute cache timeout (default 0: every\n"
        "                            stat reaches the metadata model)\n"
        "  --max-threads N           FUSE worker threads (default 64)\n"
        "  --read-ahead-kb KB        set the mount's kernel readahead (default 1024, so\n"
        "                            sequential reads reach the daemon as 1 MiB requests;\n"
        "                            needs root; -1 = leave the kernel default of 128)\n"
        "  --direct-io               bypass the page cache: every reader pays for every\n"
        "                            byte, even concurrent readers of one file; mmap\n"
        "                            MAP_SHARED then fails with ENODEV (breaks sbcast)\n"
        "  --stats FILE              write key=value counters on unmount and SIGUSR1\n"
        "  -f                        stay in the foreground\n"
        "  -d                        FUSE debug output (implies -f)\n"
        "  -o OPT[,OPT...]           FUSE mount options, e.g. -o allow_other\n"
        "  -h, --help                this text\n"
        "\n"
        "Always mounted with -o ro,default_permissions,max_read=1048576.\n");
}

bool parse_double(const char* name, const char* s, double& out) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= 0) || std::isinf(v)) {
        std::fprintf(stderr, "pfssim: invalid value for %s: '%s'\n", name, s);
        return false;
    }
    out = v;
    return true;
}

bool parse_int(const char* name, const char* s, long long lo, long long hi, long long& out) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) {
        std::fprintf(stderr, "pfssim: invalid value for %s: '%s'\n", name, s);
        return false;
    }
    out = v;
    return true;
}

std::string absolute(const std::string& p) {
    if (p.empty() || p[0] == '/') return p;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return p;
    return std::string(cwd) + "/" + p;
}

// Find our mount in /proc/self/mountinfo (no FUSE request: the loop is not
// running yet) and set /sys/class/bdi/MAJ:MIN/read_ahead_kb.
std::string unescape_mountinfo(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool ok = true;
            for (size_t k = 1; k <= 3; ++k) {
                char c = s[i + k];
                if (c < '0' || c > '7') ok = false;
                else v = v * 8 + (c - '0');
            }
            if (ok) {
                out += char(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

std::string g_bdi_path;  // /sys/class/bdi/MAJ:MIN/read_ahead_kb of our mount

void find_bdi() {
    if (g_cfg.read_ahead_kb < 0) return;
    FILE* mi = std::fopen("/proc/self/mountinfo", "r");
    if (!mi) return;
    char line[8192];
    std::string dev;
    while (std::fgets(line, sizeof line, mi)) {
        char majmin[64], mnt[4096];
        if (std::sscanf(line, "%*d %*d %63s %*s %4095s", majmin, mnt) != 2) continue;
        const char* sep = std::strstr(line, " - ");
        if (!sep || std::strncmp(sep + 3, "fuse.pfssim ", 12) != 0) continue;
        if (unescape_mountinfo(mnt) == g_cfg.mountpoint) dev = majmin;  // last one wins
    }
    std::fclose(mi);
    if (dev.empty())
        std::fprintf(stderr, "pfssim: read_ahead_kb not set: mount not found in mountinfo\n");
    else
        g_bdi_path = "/sys/class/bdi/" + dev + "/read_ahead_kb";
}

// The kernel applies min(read_ahead, INIT reply's max_readahead) when it
// processes the INIT reply, so the value can only be raised afterwards: on
// the first request after INIT (the kernel sends none before INIT is done).
std::once_flag g_read_ahead_once;

void set_read_ahead() {
    if (g_bdi_path.empty()) return;
    FILE* f = std::fopen(g_bdi_path.c_str(), "w");
    if (!f || std::fprintf(f, "%ld\n", g_cfg.read_ahead_kb) < 0 || std::fclose(f) != 0) {
        std::fprintf(stderr, "pfssim: cannot set %s: %s (reads stay at the kernel's readahead size)\n",
                     g_bdi_path.c_str(), std::strerror(errno));
    }
}

void* sigusr1_thread(void*) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) == 0 && sig == SIGUSR1) {
            if (!write_stats(false))
                std::fprintf(stderr, "pfssim: cannot write stats to %s: %s\n",
                             g_cfg.stats.c_str(), std::strerror(errno));
        }
    }
    return nullptr;
}

}  // namespace

int main(int argc, char* argv[]) {
    // SIGUSR1 is handled by a dedicated sigwait thread: block it everywhere,
    // from the start (an early SIGUSR1 must not kill us).
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, nullptr);

    std::vector<std::string> positional;
    std::vector<std::string> fuse_argv{argv[0]};
    std::string user_fuse_opts;

    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        std::string name, value;
        bool has_value = false;
        if (a.rfind("--", 0) == 0 && a.size() > 2) {
            auto eq = a.find('=');
            name = a.substr(0, eq);
            if (eq != std::string::npos) {
                value = a.substr(eq + 1);
                has_value = true;
            }
        }
        auto need = [&](const char* opt) -> bool {
            if (has_value) return true;
            if (i + 1 >= argc) {
                std::fprintf(stderr, "pfssim: %s needs a value\n", opt);
                return false;
            }
            value = argv[++i];
            return true;
        };
        long long iv = 0;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (name == "--bandwidth") {
            if (!need("--bandwidth") || !parse_double("--bandwidth", value.c_str(), g_cfg.bandwidth_mbps)) return 2;
        } else if (name == "--stream-bandwidth") {
            if (!need("--stream-bandwidth") ||
                !parse_double("--stream-bandwidth", value.c_str(), g_cfg.stream_bandwidth_mbps)) return 2;
        } else if (name == "--meta-latency-ms") {
            if (!need("--meta-latency-ms") ||
                !parse_double("--meta-latency-ms", value.c_str(), g_cfg.meta_latency_ms)) return 2;
        } else if (name == "--meta-slots") {
            if (!need("--meta-slots") || !parse_int("--meta-slots", value.c_str(), 1, 100000, iv)) return 2;
            g_cfg.meta_slots = int(iv);
        } else if (name == "--burst") {
            if (!need("--burst") || !parse_int("--burst", value.c_str(), 4096, 1LL << 40, iv)) return 2;
            g_cfg.burst_bytes = iv;
        } else if (name == "--attr-timeout") {
            if (!need("--attr-timeout") || !parse_double("--attr-timeout", value.c_str(), g_cfg.attr_timeout)) return 2;
        } else if (name == "--entry-timeout") {
            if (!need("--entry-timeout") || !parse_double("--entry-timeout", value.c_str(), g_cfg.entry_timeout)) return 2;
        } else if (name == "--max-threads") {
            if (!need("--max-threads") || !parse_int("--max-threads", value.c_str(), 1, 100000, iv)) return 2;
            g_cfg.max_threads = unsigned(iv);
        } else if (name == "--read-ahead-kb") {
            if (!need("--read-ahead-kb") || !parse_int("--read-ahead-kb", value.c_str(), -1, 1 << 20, iv)) return 2;
            g_cfg.read_ahead_kb = long(iv);
        } else if (a == "--direct-io") {
            g_cfg.direct_io = true;
        } else if (name == "--stats") {
            if (!need("--stats")) return 2;
            g_cfg.stats = absolute(value);
        } else if (a == "-o") {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "pfssim: -o needs a value\n");
                return 2;
            }
            fuse_argv.push_back(a);
            fuse_argv.push_back(argv[++i]);
            user_fuse_opts += (user_fuse_opts.empty() ? "" : ",") + std::string(argv[i]);
        } else if (a.rfind("-o", 0) == 0) {
            fuse_argv.push_back(a);
            user_fuse_opts += (user_fuse_opts.empty() ? "" : ",") + a.substr(2);
        } else if (a == "-f" || a == "-d" || a == "-s" || a == "-V" || a == "--version") {
            fuse_argv.push_back(a);
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "pfssim: unknown option '%s' (see --help)\n", a.c_str());
            return 2;
        } else {
            positional.push_back(a);
        }
    }
    if (positional.size() != 2) {
        usage(stderr);
        return 2;
    }

    char real[PATH_MAX];
    if (!realpath(positional[0].c_str(), real)) {
        std::fprintf(stderr, "pfssim: backing directory %s: %s\n", positional[0].c_str(),
                     std::strerror(errno));
        return 1;
    }
    g_cfg.backing = real;
    g_cfg.mountpoint = realpath(positional[1].c_str(), real) ? std::string(real) : positional[1];
    g_root_fd = open(g_cfg.backing.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_root_fd < 0) {
        std::fprintf(stderr, "pfssim: cannot open %s: %s\n", g_cfg.backing.c_str(),
                     std::strerror(errno));
        return 1;
    }

    g_global_bucket.configure(g_cfg.bandwidth_mbps * 1e6, g_cfg.burst_bytes);
    g_meta.configure(g_cfg.meta_slots, g_cfg.meta_latency_ms);

    std::string forced = "ro,default_permissions,fsname=pfssim,subtype=pfssim,max_read=" +
                         std::to_string(g_cfg.max_read);
    fuse_argv.push_back("-o");
    fuse_argv.push_back(forced);
    fuse_argv.push_back(g_cfg.mountpoint);

    std::fprintf(stderr,
                 "pfssim: backing=%s mountpoint=%s bandwidth_mbps=%g stream_bandwidth_mbps=%g "
                 "meta_latency_ms=%g meta_slots=%d burst_bytes=%lld entry_timeout_s=%g attr_timeout_s=%g "
                 "max_read=%u read_ahead_kb=%ld direct_io=%d max_threads=%u stats=%s fuse_opts=%s%s%s\n",
                 g_cfg.backing.c_str(), g_cfg.mountpoint.c_str(), g_cfg.bandwidth_mbps,
                 g_cfg.stream_bandwidth_mbps, g_cfg.meta_latency_ms, g_cfg.meta_slots,
                 (long long)g_cfg.burst_bytes, g_cfg.entry_timeout, g_cfg.attr_timeout, g_cfg.max_read,
                 g_cfg.read_ahead_kb, g_cfg.direct_io ? 1 : 0, g_cfg.max_threads, g_cfg.stats.empty() ? "-" : g_cfg.stats.c_str(),
                 forced.c_str(), user_fuse_opts.empty() ? "" : ",", user_fuse_opts.c_str());

    std::vector<char*> cargv;
    for (auto& s : fuse_argv) cargv.push_back(const_cast<char*>(s.c_str()));
    fuse_args args = FUSE_ARGS_INIT(int(cargv.size()), cargv.data());

    fuse_cmdline_opts opts;
    std::memset(&opts, 0, sizeof opts);
    if (fuse_parse_cmdline(&args, &opts) != 0) return 2;
    if (opts.show_version) {
        std::printf("pfssim (libfuse %s)\n", fuse_pkgversion());
        fuse_opt_free_args(&args);
        return 0;
    }

    // Sleep precision matters for 1 ms metadata latencies; threads inherit
    // the timer slack of the thread that creates them.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    fuse_operations ops = make_ops();
    fuse* f = fuse_new(&args, &ops, sizeof ops, nullptr);
    if (!f) {
        fuse_opt_free_args(&args);
        return 1;
    }
    int rc = 1;
    if (fuse_mount(f, opts.mountpoint) == 0) {
        fuse_session* se = fuse_get_session(f);
        find_bdi();
        if (fuse_set_signal_handlers(se) == 0) {
            if (fuse_daemonize(opts.foreground) == 0) {
                g_stats.start_ns = now_ns();
                pthread_t tid;
                if (pthread_create(&tid, nullptr, sigusr1_thread, nullptr) == 0)
                    pthread_detach(tid);
                int lr;
                if (opts.singlethread) {
                    lr = fuse_loop(f);
                } else {
                    fuse_loop_config* lc = fuse_loop_cfg_create();
                    fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
                    // -o max_threads=N wins over --max-threads; libfuse's
                    // own default (10) is too small when threads sleep in
                    // the throttle.
                    bool user_mt = user_fuse_opts.find("max_threads=") != std::string::npos;
                    fuse_loop_cfg_set_max_threads(lc, user_mt ? opts.max_threads
                                                              : g_cfg.max_threads);
                    if (opts.max_idle_threads != UINT_MAX)
                        fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
                    lr = fuse_loop_mt(f, lc);
                    fuse_loop_cfg_destroy(lc);
                }
                // fuse_loop returns 0 on unmount, or the signal number /
                // -errno; a signal-requested exit is a clean shutdown.
                rc = (lr == 0 || lr == SIGTERM || lr == SIGINT || lr == SIGHUP ||
                      lr == -SIGTERM || lr == -SIGINT || lr == -SIGHUP)
                         ? 0 : 1;
                if (rc != 0) std::fprintf(stderr, "pfssim: FUSE loop ended with %d\n", lr);
                if (!write_stats(true)) {
                    std::fprintf(stderr, "pfssim: cannot write stats to %s: %s\n",
                                 g_cfg.stats.c_str(), std::strerror(errno));
                    rc = 1;
                }
            }
            fuse_remove_signal_handlers(se);
        }
        fuse_unmount(f);
    }
    fuse_destroy(f);
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    return rc;
}
