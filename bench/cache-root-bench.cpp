// cache-root-bench: root's work on a node cache as the prolog does it, for
// its time and memory, without a cluster (bench/cache-root runs it; root
// only: measuring acts as the entries' owner, nobody).
//
//   cache-root-bench records DIR ENTRIES JOBS   root's use records read into
//                                               ENTRIES entries (in memory),
//                                               JOBS jobs' records on disk
//   cache-root-bench measure DIR NAMES          NAMES files in nobody's cache
//                                               directory, measured as the
//                                               prolog does, then evicted
//
// One line each: what was timed, its seconds and the peak resident memory.
// DIR is made (and kept: making a million names takes a while) as a tier
// root and a state_dir below it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <pwd.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "config/config.hpp"
#include "lib/error.hpp"
#include "tier/cache_evict.hpp"
#include "tier/cache_measure.hpp"
#include "tier/cache_records.hpp"

namespace {
using Clock = std::chrono::steady_clock;
using namespace dlstage;

double seconds_since(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

long peak_rss_mib()
{
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024;
}

void make_dir(const std::string& path, mode_t mode, const passwd* owner = nullptr)
{
    if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
        throw Error("cannot make " + path);
    ::chmod(path.c_str(), mode);
    if (owner && ::chown(path.c_str(), owner->pw_uid, owner->pw_gid) != 0)
        throw Error("cannot give " + path + " to " + owner->pw_name);
}

struct Bench {
    std::string dir;
    const passwd* nobody = ::getpwnam("nobody");
    std::string root = dir + "/tier";
    std::string state = dir + "/state";
    std::string user_dir = root + "/.cache/nobody";
    Tier tier;

    explicit Bench(std::string where) : dir(std::move(where))
    {
        if (!nobody)
            throw Error("no user nobody");
        make_dir(dir, 0755);
        make_dir(root, 0755);
        make_dir(root + "/.cache", 0755);
        make_dir(user_dir, 0700, nobody);
        make_dir(state, 0755);
        tier.name = "cache";
        tier.path = PathTemplate::parse(root + "/%j");
        tier.cleanup = Cleanup::Cache;
    }

    NodeCacheEntry owned(const std::string& dataset) const
    {
        return entry_owned_by("nobody", nobody->pw_uid, nobody->pw_gid, dataset);
    }
};

// JOBS jobs each using two of the user's entries: read into ENTRIES
// entries, once as after measuring and once more as under the lock.
int records(const std::string& dir, std::size_t entries, std::size_t jobs)
{
    Bench b(dir);
    for (std::size_t j = 0; j < jobs; ++j)
        record_cache_use(b.state, "n1", std::to_string(1000 + j),
                         {{"cache", "nobody", b.nobody->pw_uid, "d" + std::to_string(2 * j), {}, {}},
                          {"cache", "nobody", b.nobody->pw_uid, "d" + std::to_string(2 * j + 1), {}, {}}});
    std::vector<NodeCacheEntry> found;
    found.reserve(entries);
    for (std::size_t i = 0; i < entries; ++i)
        found.push_back(b.owned("d" + std::to_string(i)));
    const auto start = Clock::now();
    add_root_records(found, b.tier, b.state, "n1");
    add_root_records(found, b.tier, b.state, "n1");
    std::printf("records: %zu entries, %zu jobs: %.3f s, peak %ld MiB\n", entries, jobs, seconds_since(start),
                peak_rss_mib());
    return 0;
}

// NAMES empty files (an entry each, as names dlstage did not make are) in
// nobody's cache directory, made anew: measured as the prolog does, then
// evicted (a thousand entries, or the whole directory when it is one), as a
// prolog over its watermark would.
int measure(const std::string& dir, std::size_t names)
{
    Bench b(dir);
    for (std::size_t i = 0; i < names; ++i) {
        const std::string path = b.user_dir + "/junk-" + std::to_string(i);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || ::fchown(fd, b.nobody->pw_uid, b.nobody->pw_gid) != 0)
            throw Error("cannot make " + path);
        ::close(fd);
    }
    auto start = Clock::now();
    const FoundCacheEntries found = find_cache_entries(b.tier, b.state, "n1", 600, 600);
    std::printf("measure: %zu names: %zu entries in %.3f s, peak %ld MiB%s\n", names, found.entries.size(),
                seconds_since(start), peak_rss_mib(), found.problems.empty() ? "" : " (with problems)");
    for (const std::string& problem : found.problems)
        std::printf("  problem: %s\n", problem.c_str());
    start = Clock::now();
    std::size_t evicted = 0;
    for (std::size_t i = 0; i < found.entries.size() && evicted < 1000; ++i)
        if (evict_cache_entry(b.tier, found.entries[i], 600).empty())
            ++evicted;
    std::printf("evict: %zu entries (%s) in %.3f s\n", evicted,
                found.entries.size() == 1 ? entry_name(found.entries[0]).c_str() : "one name each",
                seconds_since(start));
    return 0;
}
}  // namespace

int main(int argc, char** argv)
{
    try {
        const std::string what = argc > 1 ? argv[1] : "";
        if (what == "records" && argc == 5)
            return records(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10));
        if (what == "measure" && argc == 4)
            return measure(argv[2], std::strtoull(argv[3], nullptr, 10));
        std::fprintf(stderr, "usage: cache-root-bench records DIR ENTRIES JOBS | measure DIR NAMES\n");
        return 2;
    } catch (const dlstage::Error& e) {
        std::fprintf(stderr, "cache-root-bench: %s\n", e.what());
        return 1;
    }
}
