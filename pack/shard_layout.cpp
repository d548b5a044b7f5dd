#include "pack/shard_layout.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "lib/error.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

// How samples are assigned to shards
// ----------------------------------
// Samples are taken in path order and each goes to the shard that is
// currently smallest (ties: the lowest shard number).  With samples of equal
// size this is plain round-robin; with unequal sizes it is round-robin
// weighted by size.  Two properties follow, both by induction over the
// samples placed (c = the largest cost of placing one sample, members plus
// the directory entries it brings into a shard):
//
//  * balance: the largest shard is at most c bytes above the smallest.
//    Placing a sample into the smallest shard makes that shard at most
//    min + c, so max - min never exceeds c.
//  * spreading: path order keeps every directory (a class, for
//    ImageNet-style trees) one contiguous run of samples, and over any
//    contiguous run each shard receives the run's bytes / shards, give or
//    take 2c: a shard's share is its growth over the run, and the shards'
//    sizes lie within c of each other both before and after the run.  So
//    every class is spread evenly over the shards, which a reader shuffling
//    shard order and a buffer of samples relies on.
//
// Largest-first greedy would balance a little tighter but groups samples by
// size rather than by class; interleaving classes and then going
// round-robin can put a whole class into one shard (3 classes, 3 shards).
// Nothing here depends on the input's order or on the clock, so the same
// tree always gives the same layout.

namespace dlstage::pack {

namespace {
constexpr std::uint64_t kBlock = 512;
constexpr std::uint64_t kUstarMaxSize = 077777777777ull;  // 11 octal digits
constexpr std::size_t kUstarNameBytes = 100;

std::uint64_t padded(std::uint64_t bytes)
{
    return (bytes + kBlock - 1) / kBlock * kBlock;
}

bool is_ascii(std::string_view text)
{
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

struct Sample {
    std::vector<std::size_t> members;    // entry indexes, in path order
    std::vector<std::size_t> ancestors;  // directory entries above it
    std::uint64_t bytes = 0;             // members only
    std::uint64_t bytes_with_dirs = 0;   // members and every ancestor
};

// The tree cut into samples, in path order.
class Samples {
public:
    explicit Samples(const std::vector<PackEntry>& entries) : entries_(entries)
    {
        sort_by_path();
        index_directories();
        group();
    }

    const std::vector<Sample>& list() const { return samples_; }
    const std::vector<std::size_t>& rank() const { return rank_; }
    const std::vector<PackEntry>& entries() const { return entries_; }

private:
    void sort_by_path()
    {
        order_.resize(entries_.size());
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        // Bytewise, as std::string compares: a parent sorts before its
        // children, and a subtree is one contiguous range.
        std::stable_sort(order_.begin(), order_.end(),
                         [this](std::size_t a, std::size_t b) { return entries_[a].path < entries_[b].path; });
        rank_.resize(entries_.size());
        for (std::size_t r = 0; r < order_.size(); ++r)
            rank_[order_[r]] = r;
    }

    void index_directories()
    {
        for (std::size_t i : order_)
            if (entries_[i].type == PackEntryType::Dir)
                dir_index_.emplace(entries_[i].path, i);
        for (const PackEntry& e : entries_)
            if (const auto parent = dir_index_.find(parent_in_tree(e.path)); parent != dir_index_.end())
                non_empty_dirs_.insert(parent->second);
    }

    // Directory entries above path, outermost first; directories the input
    // does not list (the packed directory itself) are left out.
    std::vector<std::size_t> ancestors_of(std::string_view path) const
    {
        std::vector<std::size_t> found;
        for (std::string_view dir = parent_in_tree(path); !dir.empty(); dir = parent_in_tree(dir))
            if (const auto d = dir_index_.find(dir); d != dir_index_.end())
                found.push_back(d->second);
        std::reverse(found.begin(), found.end());
        return found;
    }

    // Files by directory and name up to the first '.'; an empty directory
    // by its own path.  '\0' cannot occur in a path and '/' not in a name,
    // so the two kinds of key never meet.
    std::string key_of(std::size_t i) const
    {
        const PackEntry& e = entries_[i];
        if (e.type == PackEntryType::Dir)
            return e.path + '\0' + '/';
        const std::string_view base = base_name(e.path);
        return std::string(parent_in_tree(e.path)) + '\0' + std::string(base.substr(0, base.find('.')));
    }

    void group()
    {
        std::unordered_map<std::string, std::size_t> by_key;
        for (std::size_t i : order_) {
            const PackEntry& e = entries_[i];
            if (e.type == PackEntryType::Dir && non_empty_dirs_.count(i))
                continue;  // placed wherever its contents go
            const auto [it, is_new] = by_key.emplace(key_of(i), samples_.size());
            if (is_new) {
                samples_.emplace_back();
                samples_.back().ancestors = ancestors_of(e.path);
            }
            Sample& sample = samples_[it->second];
            sample.members.push_back(i);
            sample.bytes += tar_member_bytes(e);
        }
        for (Sample& sample : samples_) {
            sample.bytes_with_dirs = sample.bytes;
            for (std::size_t d : sample.ancestors)
                sample.bytes_with_dirs += tar_member_bytes(entries_[d]);
        }
    }

    const std::vector<PackEntry>& entries_;
    std::vector<std::size_t> order_;                               // entry indexes by path
    std::vector<std::size_t> rank_;                                // entry index -> position in order_
    std::unordered_map<std::string_view, std::size_t> dir_index_;  // views of entries_' paths
    std::unordered_set<std::size_t> non_empty_dirs_;
    std::vector<Sample> samples_;
};

// Each sample, in path order, into the currently smallest shard.
ShardLayout assign(const Samples& samples, std::size_t shard_count)
{
    ShardLayout layout;
    layout.sample_count = samples.list().size();
    layout.shards.resize(shard_count);
    std::vector<std::unordered_set<std::size_t>> dirs_in(shard_count);
    using Slot = std::pair<std::uint64_t, std::size_t>;  // (bytes, shard): smallest first, then lowest number
    std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> smallest;
    for (std::size_t s = 0; s < shard_count; ++s) {
        layout.shards[s].bytes = kTarEndBytes;
        smallest.emplace(kTarEndBytes, s);
    }
    for (const Sample& sample : samples.list()) {
        const std::size_t s = smallest.top().second;
        smallest.pop();
        PackShard& shard = layout.shards[s];
        for (std::size_t d : sample.ancestors) {
            if (dirs_in[s].insert(d).second) {
                shard.members.push_back(d);
                shard.bytes += tar_member_bytes(samples.entries()[d]);
            }
        }
        shard.members.insert(shard.members.end(), sample.members.begin(), sample.members.end());
        shard.bytes += sample.bytes;
        ++shard.samples;
        layout.largest_sample_bytes = std::max(layout.largest_sample_bytes, sample.bytes_with_dirs);
        smallest.emplace(shard.bytes, s);
    }
    const std::vector<std::size_t>& rank = samples.rank();
    for (PackShard& shard : layout.shards)
        std::sort(shard.members.begin(), shard.members.end(),
                  [&rank](std::size_t a, std::size_t b) { return rank[a] < rank[b]; });
    return layout;
}

std::uint64_t largest_shard(const ShardLayout& layout)
{
    std::uint64_t largest = 0;
    for (const PackShard& shard : layout.shards)
        largest = std::max(largest, shard.bytes);
    return largest;
}

void check_every_sample_fits(const Samples& samples, std::uint64_t max_shard_bytes)
{
    for (const Sample& sample : samples.list()) {
        if (kTarEndBytes + sample.bytes_with_dirs > max_shard_bytes)
            throw Error("sample " + quoted(sample_name(samples.entries()[sample.members.front()].path)) + " (" +
                        format_size(kTarEndBytes + sample.bytes_with_dirs) + " as a tar) does not fit in a shard of " +
                        format_size(max_shard_bytes) + "; raise the shard size");
    }
}
}  // namespace

std::uint64_t tar_member_bytes(const PackEntry& entry)
{
    const bool is_file = entry.type == PackEntryType::File;
    const bool is_link = entry.type == PackEntryType::Symlink;
    std::uint64_t bytes = kBlock + (is_file ? padded(entry.size) : 0);
    // libarchive adds a '/' to directory names.  A symlink's target may
    // hold bytes that are not ASCII, which cannot be seen from here: count
    // a pax header for every symlink (they are rare in datasets).
    const std::size_t name_bytes = entry.path.size() + (entry.type == PackEntryType::Dir ? 1 : 0);
    const bool needs_pax = name_bytes >= kUstarNameBytes || !is_ascii(entry.path) || is_link ||
                           (is_file && entry.size > kUstarMaxSize);
    if (needs_pax) {
        // Its own header, then "LEN key=value\n" records: path, linkpath,
        // size, mtime, ids and hdrcharset fit in 200 bytes beside the names.
        const std::uint64_t records = entry.path.size() + (is_link ? entry.size : 0) + 200;
        bytes += kBlock + padded(records);
    }
    return bytes;
}

std::string sample_name(std::string_view path)
{
    const std::string_view base = base_name(path);
    const std::string_view parent = parent_in_tree(path);
    const std::string stem(base.substr(0, base.find('.')));
    return parent.empty() ? stem : std::string(parent) + "/" + stem;
}

ShardLayout lay_out_shards_by_count(const std::vector<PackEntry>& entries, std::size_t shard_count)
{
    if (shard_count == 0)
        throw Error("the number of shards must be at least 1");
    const Samples samples(entries);
    return assign(samples, std::max<std::size_t>(1, std::min(shard_count, samples.list().size())));
}

ShardLayout lay_out_shards_by_size(const std::vector<PackEntry>& entries, std::uint64_t max_shard_bytes)
{
    const Samples samples(entries);
    check_every_sample_fits(samples, max_shard_bytes);
    const std::size_t sample_count = samples.list().size();
    if (sample_count == 0)
        return assign(samples, 1);
    std::uint64_t sample_bytes = 0;
    for (const Sample& sample : samples.list())
        sample_bytes += sample.bytes;
    // Fewer shards than this cannot hold the samples even without
    // directories; one sample per shard always fits (checked above).
    const std::uint64_t capacity = max_shard_bytes - kTarEndBytes;
    const std::size_t lower =
        static_cast<std::size_t>(std::clamp<std::uint64_t>((sample_bytes + capacity - 1) / capacity, 1, sample_count));
    const auto fits = [&](std::size_t count) { return largest_shard(assign(samples, count)) <= max_shard_bytes; };

    // Usually the lower bound or one more fits: search upward in growing
    // steps, then narrow down between the last miss and the first fit.
    std::size_t miss = lower - 1;  // 0: "below the range"
    std::size_t fit = lower;
    // (One sample per shard always fits, so the search ends at sample_count.)
    for (std::size_t step = 1; fit < sample_count && !fits(fit); step *= 2) {
        miss = fit;
        fit = std::min(sample_count, fit + step);
    }
    while (fit - miss > 1) {
        const std::size_t middle = miss + (fit - miss) / 2;
        (fits(middle) ? fit : miss) = middle;
    }
    return assign(samples, fit);
}

}  // namespace dlstage::pack
