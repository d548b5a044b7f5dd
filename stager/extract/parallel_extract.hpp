// Several tar shards unpacked into one directory at once, one archive
// handle per thread.  The result must equal `tar -x` of each shard in turn:
// shards that share no file name (WebDataset's) can go in any order; if two
// shards write the same name, the directory is cleared and the shards are
// extracted again one by one, in order, so the later shard wins as with tar.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stager/extract/extract.hpp"

namespace dlstage::stager {

struct ShardsResult {
    ExtractStats stats;
    bool sequential_fallback = false;  // shards overlapped
};

// dest exists.  clear_dest empties it for the fallback.  Throws the first
// shard's Error.  All threads count what they write in one budget, which
// starts over when the fallback does.
ShardsResult extract_shards(const std::vector<std::string>& shards, const std::string& dest, unsigned threads,
                            const std::function<void()>& clear_dest, ExtractBudget& budget);

}  // namespace dlstage::stager
