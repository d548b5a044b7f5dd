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
// This file: the command line and the mount; model.hpp the model,
// operations.cpp the FUSE operations, read_ahead.cpp the kernel readahead.

#include "tests/pfssim/operations.hpp"  // first: it sets FUSE_USE_VERSION

#include <fuse_lowlevel.h>  // fuse_parse_cmdline

#include "tests/pfssim/model.hpp"
#include "tests/pfssim/read_ahead.hpp"

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

using namespace pfssim;

namespace {

// ---------------------------------------------------------- command line ----

void usage(FILE* out)
{
    std::fprintf(out, "usage: pfssim BACKING_DIR MOUNTPOINT [options] [FUSE options]\n"
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
                      "  --faults FILE             inject faults while FILE says so; re-read when it\n"
                      "                            changes (checked at most every 100 ms), missing =\n"
                      "                            none.  key=value lines, others ignored:\n"
                      "                              read_errno=N        every read fails with errno N\n"
                      "                              open_errno=N        every open fails with errno N\n"
                      "                              extra_latency_ms=N  every read and metadata op\n"
                      "                                                  takes N ms longer\n"
                      "                            (0 = off; errno 1-511, open_errno not 38 = ENOSYS)\n"
                      "  -f                        stay in the foreground\n"
                      "  -d                        FUSE debug output (implies -f)\n"
                      "  -o OPT[,OPT...]           FUSE mount options, e.g. -o allow_other\n"
                      "  -h, --help                this text\n"
                      "\n"
                      "Always mounted with -o ro,default_permissions,max_read=1048576.\n");
}

bool parse_double(const char* name, const char* s, double& out)
{
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

bool parse_int(const char* name, const char* s, long long lo, long long hi, long long& out)
{
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

std::string absolute(const std::string& p)
{
    if (p.empty() || p[0] == '/')
        return p;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return p;
    return std::string(cwd) + "/" + p;
}

void* sigusr1_thread(void*)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) == 0 && sig == SIGUSR1) {
            if (!write_stats(false))
                std::fprintf(stderr, "pfssim: cannot write stats to %s: %s\n", g_cfg.stats.c_str(),
                             std::strerror(errno));
        }
    }
    return nullptr;
}

}  // namespace

int main(int argc, char* argv[])
{
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
            if (has_value)
                return true;
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
            if (!need("--bandwidth") || !parse_double("--bandwidth", value.c_str(), g_cfg.bandwidth_mbps))
                return 2;
        } else if (name == "--stream-bandwidth") {
            if (!need("--stream-bandwidth") ||
                !parse_double("--stream-bandwidth", value.c_str(), g_cfg.stream_bandwidth_mbps))
                return 2;
        } else if (name == "--meta-latency-ms") {
            if (!need("--meta-latency-ms") || !parse_double("--meta-latency-ms", value.c_str(), g_cfg.meta_latency_ms))
                return 2;
        } else if (name == "--meta-slots") {
            if (!need("--meta-slots") || !parse_int("--meta-slots", value.c_str(), 1, 100000, iv))
                return 2;
            g_cfg.meta_slots = int(iv);
        } else if (name == "--burst") {
            if (!need("--burst") || !parse_int("--burst", value.c_str(), 4096, 1LL << 40, iv))
                return 2;
            g_cfg.burst_bytes = iv;
        } else if (name == "--attr-timeout") {
            if (!need("--attr-timeout") || !parse_double("--attr-timeout", value.c_str(), g_cfg.attr_timeout))
                return 2;
        } else if (name == "--entry-timeout") {
            if (!need("--entry-timeout") || !parse_double("--entry-timeout", value.c_str(), g_cfg.entry_timeout))
                return 2;
        } else if (name == "--max-threads") {
            if (!need("--max-threads") || !parse_int("--max-threads", value.c_str(), 1, 100000, iv))
                return 2;
            g_cfg.max_threads = unsigned(iv);
        } else if (name == "--read-ahead-kb") {
            if (!need("--read-ahead-kb") || !parse_int("--read-ahead-kb", value.c_str(), -1, 1 << 20, iv))
                return 2;
            g_cfg.read_ahead_kb = long(iv);
        } else if (a == "--direct-io") {
            g_cfg.direct_io = true;
        } else if (name == "--stats") {
            if (!need("--stats"))
                return 2;
            g_cfg.stats = absolute(value);
        } else if (name == "--faults") {
            if (!need("--faults"))
                return 2;
            // Absolute: the daemon changes to / when it detaches.
            g_cfg.faults = absolute(value);
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
        std::fprintf(stderr, "pfssim: backing directory %s: %s\n", positional[0].c_str(), std::strerror(errno));
        return 1;
    }
    g_cfg.backing = real;
    g_cfg.mountpoint = realpath(positional[1].c_str(), real) ? std::string(real) : positional[1];
    g_root_fd = open(g_cfg.backing.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_root_fd < 0) {
        std::fprintf(stderr, "pfssim: cannot open %s: %s\n", g_cfg.backing.c_str(), std::strerror(errno));
        return 1;
    }

    g_global_bucket.configure(g_cfg.bandwidth_mbps * 1e6, g_cfg.burst_bytes);
    g_meta.configure(g_cfg.meta_slots, g_cfg.meta_latency_ms);
    g_faults.configure(g_cfg.faults);

    std::string forced =
        "ro,default_permissions,fsname=pfssim,subtype=pfssim,max_read=" + std::to_string(g_cfg.max_read);
    fuse_argv.push_back("-o");
    fuse_argv.push_back(forced);
    fuse_argv.push_back(g_cfg.mountpoint);

    std::fprintf(stderr,
                 "pfssim: backing=%s mountpoint=%s bandwidth_mbps=%g stream_bandwidth_mbps=%g "
                 "meta_latency_ms=%g meta_slots=%d burst_bytes=%lld entry_timeout_s=%g attr_timeout_s=%g "
                 "max_read=%u read_ahead_kb=%ld direct_io=%d max_threads=%u stats=%s faults=%s fuse_opts=%s%s%s\n",
                 g_cfg.backing.c_str(), g_cfg.mountpoint.c_str(), g_cfg.bandwidth_mbps, g_cfg.stream_bandwidth_mbps,
                 g_cfg.meta_latency_ms, g_cfg.meta_slots, (long long)g_cfg.burst_bytes, g_cfg.entry_timeout,
                 g_cfg.attr_timeout, g_cfg.max_read, g_cfg.read_ahead_kb, g_cfg.direct_io ? 1 : 0, g_cfg.max_threads,
                 g_cfg.stats.empty() ? "-" : g_cfg.stats.c_str(), g_cfg.faults.empty() ? "-" : g_cfg.faults.c_str(),
                 forced.c_str(), user_fuse_opts.empty() ? "" : ",", user_fuse_opts.c_str());
    // Faults already switched on show up in the log right after that line.
    g_faults.poll();

    std::vector<char*> cargv;
    for (auto& s : fuse_argv)
        cargv.push_back(const_cast<char*>(s.c_str()));
    fuse_args args = FUSE_ARGS_INIT(int(cargv.size()), cargv.data());

    fuse_cmdline_opts opts;
    std::memset(&opts, 0, sizeof opts);
    if (fuse_parse_cmdline(&args, &opts) != 0)
        return 2;
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
                    fuse_loop_cfg_set_max_threads(lc, user_mt ? opts.max_threads : g_cfg.max_threads);
                    if (opts.max_idle_threads != UINT_MAX)
                        fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
                    lr = fuse_loop_mt(f, lc);
                    fuse_loop_cfg_destroy(lc);
                }
                // fuse_loop returns 0 on unmount, or the signal number /
                // -errno; a signal-requested exit is a clean shutdown.
                rc = (lr == 0 || lr == SIGTERM || lr == SIGINT || lr == SIGHUP || lr == -SIGTERM || lr == -SIGINT ||
                      lr == -SIGHUP)
                         ? 0
                         : 1;
                if (rc != 0)
                    std::fprintf(stderr, "pfssim: FUSE loop ended with %d\n", lr);
                if (!write_stats(true)) {
                    std::fprintf(stderr, "pfssim: cannot write stats to %s: %s\n", g_cfg.stats.c_str(),
                                 std::strerror(errno));
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
