// plan-bench: the memory and time of planning a tree, as one rank of the
// stager does it, without MPI or a cluster (bench/plan-memory runs it).
//
//   plan-bench make-tree DIR DIRS FILES_PER_DIR [BYTES]   a tree of tiny files
//   plan-bench plan DIR [CHUNK_SIZE [MANIFEST_DIR]]       plan it, report
//   plan-bench scan DIR MANIFEST_DIR                      its manifest (catalog scan)
//
// `plan` does what the ranks do in broadcast_plan and after it, each in a
// process of its own: rank 0 walks into a plan and sends its header and
// blocks (to a file, where MPI_Bcast would send them), another rank
// receives them in place; both lay out the chunks and set up the tree
// writer's bookkeeping (no file is written).  One line per phase, each
// rank's peak resident memory, and the larger one with rank 0's seconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <functional>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "stager/plan/manifest_scan.hpp"
#include "stager/plan/plan.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/tree_writer.hpp"

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::uint64_t peak_rss_kib()
{
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<std::uint64_t>(usage.ru_maxrss);
}

void phase(const char* what, Clock::time_point start)
{
    std::printf("%-12s %7.2f s   peak so far %6.1f MiB\n", what, seconds_since(start),
                static_cast<double>(peak_rss_kib()) / 1024.0);
    std::fflush(stdout);
}

int make_tree(const std::string& dir, long dirs, long files, long bytes)
{
    const std::string content(static_cast<std::size_t>(bytes), 'x');
    if (mkdir(dir.c_str(), 0755) != 0) {
        std::perror(dir.c_str());
        return 1;
    }
    char name[64];
    for (long d = 0; d < dirs; ++d) {
        std::snprintf(name, sizeof name, "/n%08ld", d);
        const std::string sub = dir + name;
        if (mkdir(sub.c_str(), 0755) != 0) {
            std::perror(sub.c_str());
            return 1;
        }
        for (long f = 0; f < files; ++f) {
            // ImageNet's names: n01440764_10026.JPEG
            std::snprintf(name, sizeof name, "/n%08ld_%05ld.JPEG", d, f);
            const std::string path = sub + name;
            const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 || ::write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
                ::close(fd) != 0) {
                std::perror(path.c_str());
                return 1;
            }
        }
    }
    return 0;
}

// What every rank does once it holds the plan: the chunk layout and the
// tree writer's bookkeeping (no file is written).
void lay_out(const dlstage::stager::Plan& plan, const std::string& dir, std::uint64_t chunk_size)
{
    auto t = Clock::now();
    const auto chunks = dlstage::stager::layout_chunks(plan, chunk_size);
    phase("chunks", t);
    t = Clock::now();
    const dlstage::stager::TreeWriter writer(plan, dir + ".never-written");
    phase("writer", t);
    std::printf("entries %llu files %llu chunks %zu\n", static_cast<unsigned long long>(plan.entry_count()),
                static_cast<unsigned long long>(plan.file_count()), chunks.size());
}

void write_block(int fd, const void* data, std::size_t size)
{
    if (::write(fd, data, size) != static_cast<ssize_t>(size))
        throw dlstage::Error("cannot write the plan's wire bytes");
}

void read_block(int fd, void* data, std::size_t size)
{
    if (::read(fd, data, size) != static_cast<ssize_t>(size))
        throw dlstage::Error("cannot read the plan's wire bytes");
}

// Rank 0: the walk into a plan, its header and blocks sent (here written
// to wire, as MPI_Bcast would send them: from the plan's own memory).
dlstage::Dataset bench_dataset(const std::string& dir)
{
    dlstage::Dataset dataset;
    dataset.name = "bench";
    dataset.source = dir;
    return dataset;
}

// With a manifest_dir, rank 0 plans as the stager does (plan_for: from the
// manifest there when it is current).
void rank0(const std::string& dir, std::uint64_t chunk_size, int wire, const std::string& manifest_dir)
{
    using namespace dlstage::stager;
    auto t = Clock::now();
    std::string note;
    const Plan plan = manifest_dir.empty() ? build_plan(bench_dataset(dir))
                                           : plan_for(manifest_dir, bench_dataset(dir), note);
    if (!note.empty())
        std::printf("%s\n", note.c_str());
    phase(plan.from_manifest ? "manifest" : "walk", t);
    t = Clock::now();
    const std::string header = wire_header(plan);
    const std::uint64_t size = header.size();
    write_block(wire, &size, sizeof size);
    write_block(wire, header.data(), header.size());
    write_block(wire, plan.entries.records().data(),
                plan.entries.records().size() * sizeof(dlstage::EntryList::Record));
    write_block(wire, plan.entries.arena().data(), plan.entries.arena().size());
    phase("send", t);
    lay_out(plan, dir, chunk_size);
}

// Any other rank: the header, then the blocks received in place.
void receiver(const std::string& dir, std::uint64_t chunk_size, int wire)
{
    using namespace dlstage::stager;
    auto t = Clock::now();
    std::uint64_t size = 0;
    read_block(wire, &size, sizeof size);
    std::string header(size, '\0');
    read_block(wire, header.data(), header.size());
    PlanReceiver in = receive_header(header);
    read_block(wire, in.records.data(), in.records.size() * sizeof(dlstage::EntryList::Record));
    read_block(wire, in.arena.data(), in.arena.size());
    in.adopt_blocks();
    phase("receive", t);
    lay_out(in.plan, dir, chunk_size);
}

// Runs one rank's part in a child of its own, so each has its own peak.
double as_child(const char* name, const std::function<void()>& part)
{
    std::printf("-- %s\n", name);
    std::fflush(stdout);
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0)
        throw dlstage::Error("no pipe");
    const pid_t pid = fork();
    if (pid == 0) {
        ::close(pipe_fds[0]);
        int code = 0;
        try {
            part();
        } catch (const dlstage::Error& e) {
            std::fprintf(stderr, "plan-bench: %s\n", e.what());
            code = 1;
        }
        const double peak = static_cast<double>(peak_rss_kib()) / 1024.0;
        write_block(pipe_fds[1], &peak, sizeof peak);
        std::fflush(stdout);
        _exit(code);
    }
    ::close(pipe_fds[1]);
    double peak = -1;
    read_block(pipe_fds[0], &peak, sizeof peak);
    ::close(pipe_fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw dlstage::Error(std::string(name) + " failed");
    std::printf("%s peak %.1f MiB\n", name, peak);
    return peak;
}

int scan(const std::string& dir, const std::string& manifest_dir)
{
    const auto t = Clock::now();
    dlstage::write_manifest(dlstage::manifest_path(manifest_dir, "bench"),
                            dlstage::stager::scan_dataset(bench_dataset(dir), 16));
    phase("scan", t);
    return 0;
}

int plan(const std::string& dir, std::uint64_t chunk_size, const std::string& manifest_dir)
{
    const std::string wire_path = dir + ".plan-wire";
    const int out = ::open(wire_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        throw dlstage::Error("cannot create " + wire_path);
    const auto start = Clock::now();
    const double peak0 = as_child("rank 0", [&] { rank0(dir, chunk_size, out, manifest_dir); });
    const double seconds0 = seconds_since(start);
    ::close(out);
    const int in = ::open(wire_path.c_str(), O_RDONLY | O_CLOEXEC);
    ::unlink(wire_path.c_str());
    const double peak1 = as_child("rank 1", [&] { receiver(dir, chunk_size, in); });
    ::close(in);
    std::printf("RESULT seconds %.2f peak_rss_mib %.1f\n", seconds0, std::max(peak0, peak1));
    return 0;
}
}  // namespace

int main(int argc, char** argv)
{
    try {
        const std::string what = argc > 1 ? argv[1] : "";
        if (what == "make-tree" && (argc == 5 || argc == 6))
            return make_tree(argv[2], std::atol(argv[3]), std::atol(argv[4]), argc == 6 ? std::atol(argv[5]) : 16);
        if (what == "plan" && argc >= 3 && argc <= 5)
            return plan(argv[2], argc >= 4 ? std::strtoull(argv[3], nullptr, 10) : 4ull << 20,  // the stager's default
                        argc == 5 ? argv[4] : "");
        if (what == "scan" && argc == 4)
            return scan(argv[2], argv[3]);
    } catch (const dlstage::Error& e) {
        std::fprintf(stderr, "plan-bench: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: plan-bench make-tree DIR DIRS FILES_PER_DIR [BYTES]\n"
                         "       plan-bench plan DIR [CHUNK_SIZE [MANIFEST_DIR]]\n"
                         "       plan-bench scan DIR MANIFEST_DIR\n");
    return 2;
}
