// Work spread over a few threads: how the dataset walk, the extraction of
// several tar shards and the manifest scan keep many files in flight.
#pragma once

#include <cstddef>
#include <functional>

namespace dlstage {

// Runs work() on `threads` threads (at least one) and waits for all of them.
void run_on_threads(unsigned threads, const std::function<void()>& work);

// fn(i) for every i below count, on up to `threads` threads, each taking the
// next index.  The first exception stops the handing out of indexes and is
// rethrown once every thread has stopped.
void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn);

}  // namespace dlstage
