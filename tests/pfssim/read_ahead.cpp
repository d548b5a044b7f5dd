// Setting the mount's kernel readahead (see read_ahead.hpp).
#include "tests/pfssim/read_ahead.hpp"

#include "tests/pfssim/model.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace pfssim {

namespace {

// Find our mount in /proc/self/mountinfo (no FUSE request: the loop is not
// running yet) and set /sys/class/bdi/MAJ:MIN/read_ahead_kb.
std::string unescape_mountinfo(const std::string& s)
{
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool ok = true;
            for (size_t k = 1; k <= 3; ++k) {
                char c = s[i + k];
                if (c < '0' || c > '7')
                    ok = false;
                else
                    v = v * 8 + (c - '0');
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

}  // namespace

void find_bdi()
{
    if (g_cfg.read_ahead_kb < 0)
        return;
    FILE* mi = std::fopen("/proc/self/mountinfo", "r");
    if (!mi)
        return;
    char line[8192];
    std::string dev;
    while (std::fgets(line, sizeof line, mi)) {
        char majmin[64], mnt[4096];
        if (std::sscanf(line, "%*d %*d %63s %*s %4095s", majmin, mnt) != 2)
            continue;
        const char* sep = std::strstr(line, " - ");
        if (!sep || std::strncmp(sep + 3, "fuse.pfssim ", 12) != 0)
            continue;
        if (unescape_mountinfo(mnt) == g_cfg.mountpoint)
            dev = majmin;  // last one wins
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

void set_read_ahead()
{
    if (g_bdi_path.empty())
        return;
    FILE* f = std::fopen(g_bdi_path.c_str(), "w");
    if (!f || std::fprintf(f, "%ld\n", g_cfg.read_ahead_kb) < 0 || std::fclose(f) != 0) {
        std::fprintf(stderr, "pfssim: cannot set %s: %s (reads stay at the kernel's readahead size)\n",
                     g_bdi_path.c_str(), std::strerror(errno));
    }
}

}  // namespace pfssim
