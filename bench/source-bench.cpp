// source-bench DIR OPENS WALK_THREADS: the two metadata-bound parts of
// staging a source, timed apart and without Slurm or MPI: the walk that
// plans it (build_plan) and the reading of every chunk by 4 reader threads
// as one rank of the ring reads them (SourceReader, OPENS per rank shared
// among them).  How DLSTAGE_OPENS's default was chosen (bench/latency says
// how it works out in whole stagings); prints
//   opens=O walk_threads=W files=F walk_s=S read_s=S
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/stager_tuning.hpp"
#include "lib/sys/parallel.hpp"
#include "stager/plan/plan.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/source_reader.hpp"

using namespace dlstage;
using namespace dlstage::stager;

int main(int argc, char** argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: source-bench DIR OPENS WALK_THREADS\n");
        return 2;
    }
    Dataset dataset;
    dataset.name = "bench";
    dataset.source = argv[1];
    StagerTuning tuning;
    tuning.opens = static_cast<unsigned>(std::atoi(argv[2]));
    const unsigned walk_threads = static_cast<unsigned>(std::atoi(argv[3]));
    try {
        const auto t0 = std::chrono::steady_clock::now();
        const Plan plan = build_plan(dataset, walk_threads);
        const auto t1 = std::chrono::steady_clock::now();
        const auto chunks = layout_chunks(plan, tuning.chunk_size);
        std::atomic<std::size_t> next{0};
        run_on_threads(tuning.readers, [&] {
            SourceReader reader(plan, opens_per_reader(tuning));
            std::vector<char> buffer(tuning.chunk_size);
            for (std::size_t c; (c = next++) < chunks.size();)
                reader.read(chunks[c], buffer.data());
        });
        const auto t2 = std::chrono::steady_clock::now();
        std::printf("opens=%u walk_threads=%u files=%llu walk_s=%.2f read_s=%.2f\n", tuning.opens, walk_threads,
                    static_cast<unsigned long long>(plan.file_count()), std::chrono::duration<double>(t1 - t0).count(),
                    std::chrono::duration<double>(t2 - t1).count());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "source-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
