// extract-bench THREADS DEST SHARD...: dlstage's shard extraction (the
// stager's own code, stager/extract/parallel_extract) timed alone, so the benchmark
// compares it with GNU tar on the same node under the same conditions.
// Built by bench/run against the build tree's libraries.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "stager/extract/parallel_extract.hpp"

int main(int argc, char** argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: extract-bench THREADS DEST SHARD...\n");
        return 2;
    }
    const unsigned threads = static_cast<unsigned>(std::atoi(argv[1]));
    const std::string dest = argv[2];
    const std::vector<std::string> shards(argv + 3, argv + argc);
    if (mkdir(dest.c_str(), 0755) != 0) {
        std::perror(dest.c_str());
        return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    dlstage::stager::ExtractBudget unlimited;
    const auto result = dlstage::stager::extract_shards(
        shards, dest, threads, [] {}, unlimited);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.3f\n", seconds);
    return result.sequential_fallback ? 3 : 0;
}
