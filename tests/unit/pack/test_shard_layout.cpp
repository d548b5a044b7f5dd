#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "lib/error.hpp"
#include "pack/shard_layout.hpp"
#include "tests/unit/support/error_of.hpp"

using namespace dlstage;
using namespace dlstage::pack;

namespace {
PackEntry dir(const std::string& path)
{
    return {path, PackEntryType::Dir, 0};
}

PackEntry file(const std::string& path, std::uint64_t size)
{
    return {path, PackEntryType::File, size};
}

// A small deterministic generator: the same "random" sizes on every run.
class Sizes {
public:
    std::uint64_t next(std::uint64_t low, std::uint64_t high)
    {
        state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
        return low + (state_ >> 33) % (high - low + 1);
    }

private:
    std::uint64_t state_ = 42;
};

// An ImageNet-like tree: train/CLASS/CLASS_N.JPEG + .cls, sizes 1-50 KB.
std::vector<PackEntry> imagenet_like(int classes, int samples_per_class)
{
    Sizes sizes;
    std::vector<PackEntry> entries = {dir("train")};
    for (int c = 0; c < classes; ++c) {
        const std::string cls = "n0" + std::to_string(1000 + c);
        entries.push_back(dir("train/" + cls));
        for (int s = 0; s < samples_per_class; ++s) {
            const std::string stem = "train/" + cls + "/" + cls + "_" + std::to_string(s);
            entries.push_back(file(stem + ".JPEG", sizes.next(1000, 50000)));
            entries.push_back(file(stem + ".cls", 4));
        }
    }
    return entries;
}

std::string class_of(const std::string& path)
{
    const std::size_t first = path.find('/');
    const std::size_t second = path.find('/', first + 1);
    return second == std::string::npos ? "" : path.substr(0, second);
}

// Shard number of every entry path (directories may be in several: the
// last one wins; use shards_of for them).
std::map<std::string, std::size_t> shard_of_paths(const std::vector<PackEntry>& entries, const ShardLayout& layout)
{
    std::map<std::string, std::size_t> where;
    for (std::size_t s = 0; s < layout.shards.size(); ++s)
        for (std::size_t i : layout.shards[s].members)
            where[entries[i].path] = s;
    return where;
}

std::set<std::size_t> shards_of(const std::vector<PackEntry>& entries, const ShardLayout& layout,
                                const std::string& path)
{
    std::set<std::size_t> found;
    for (std::size_t s = 0; s < layout.shards.size(); ++s)
        for (std::size_t i : layout.shards[s].members)
            if (entries[i].path == path)
                found.insert(s);
    return found;
}

std::pair<std::uint64_t, std::uint64_t> smallest_and_largest(const ShardLayout& layout)
{
    std::uint64_t smallest = UINT64_MAX, largest = 0;
    for (const PackShard& shard : layout.shards) {
        smallest = std::min(smallest, shard.bytes);
        largest = std::max(largest, shard.bytes);
    }
    return {smallest, largest};
}

// The shards as lists of paths: comparable across differently ordered inputs.
std::vector<std::vector<std::string>> paths_by_shard(const std::vector<PackEntry>& entries, const ShardLayout& layout)
{
    std::vector<std::vector<std::string>> result;
    for (const PackShard& shard : layout.shards) {
        result.emplace_back();
        for (std::size_t i : shard.members)
            result.back().push_back(entries[i].path);
    }
    return result;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(shard_layout)

BOOST_AUTO_TEST_CASE(sample_is_directory_and_name_up_to_the_first_dot)
{
    BOOST_TEST(sample_name("train/n01/n01_10026.JPEG") == "train/n01/n01_10026");
    BOOST_TEST(sample_name("train/n01/n01_10026.cls") == "train/n01/n01_10026");
    BOOST_TEST(sample_name("a.seg.png") == "a");
    BOOST_TEST(sample_name("noext") == "noext");
    BOOST_TEST(sample_name("d/.hidden") == "d/");
}

BOOST_AUTO_TEST_CASE(tar_bytes_are_headers_and_padded_data)
{
    BOOST_TEST(tar_member_bytes(file("a", 0)) == 512u);
    BOOST_TEST(tar_member_bytes(file("a", 1)) == 1024u);
    BOOST_TEST(tar_member_bytes(file("a", 512)) == 1024u);
    BOOST_TEST(tar_member_bytes(file("a", 513)) == 1536u);
    BOOST_TEST(tar_member_bytes(dir("d")) == 512u);
    // Names ustar cannot hold need a pax header in front.
    BOOST_TEST(tar_member_bytes(file(std::string(150, 'x'), 1)) == 2048u);
    BOOST_TEST(tar_member_bytes(file("na\xc3\xafve", 1)) == 2048u);
    BOOST_TEST(tar_member_bytes({"link", PackEntryType::Symlink, 600}) == 512u + 512u + 1024u);
}

BOOST_AUTO_TEST_CASE(every_file_in_exactly_one_shard_and_samples_never_split)
{
    const auto entries = imagenet_like(3, 20);
    const ShardLayout layout = lay_out_shards_by_count(entries, 4);
    BOOST_TEST(layout.shards.size() == 4u);
    BOOST_TEST(layout.sample_count == 60u);
    std::map<std::string, int> copies;
    std::map<std::string, std::set<std::size_t>> shards_of_sample;
    for (std::size_t s = 0; s < layout.shards.size(); ++s) {
        for (std::size_t i : layout.shards[s].members) {
            if (entries[i].type == PackEntryType::Dir)
                continue;
            ++copies[entries[i].path];
            shards_of_sample[sample_name(entries[i].path)].insert(s);
        }
    }
    BOOST_TEST(copies.size() == 120u);
    for (const auto& [path, count] : copies)
        BOOST_TEST(count == 1, path);
    for (const auto& [sample, shards] : shards_of_sample)
        BOOST_TEST(shards.size() == 1u, sample);
}

BOOST_AUTO_TEST_CASE(samples_group_even_when_not_adjacent_in_sorted_order)
{
    // "a-b.x" sorts between "a" and "a.x": the two still form one sample.
    const std::vector<PackEntry> entries = {file("a", 10), file("a-b.x", 10), file("a.x", 10), file("b.x", 10)};
    const ShardLayout layout = lay_out_shards_by_count(entries, 3);
    BOOST_TEST(layout.sample_count == 3u);
    const auto where = shard_of_paths(entries, layout);
    BOOST_TEST(where.at("a") == where.at("a.x"));
    BOOST_TEST(where.at("a") != where.at("a-b.x"));
    // Same stem in different directories: different samples.
    const std::vector<PackEntry> two_dirs = {dir("p"), dir("q"), file("p/x.jpg", 10), file("q/x.jpg", 10)};
    BOOST_TEST(lay_out_shards_by_count(two_dirs, 2).sample_count == 2u);
}

BOOST_AUTO_TEST_CASE(sizes_balanced_within_the_largest_sample)
{
    for (const std::size_t shards : {2u, 3u, 4u, 7u, 16u}) {
        const auto entries = imagenet_like(5, 40);
        const ShardLayout layout = lay_out_shards_by_count(entries, shards);
        const auto [smallest, largest] = smallest_and_largest(layout);
        // The bound: one sample with the directories it brings along.
        BOOST_TEST(layout.largest_sample_bytes <= 512u * 3 + 50176u + 1024u);
        BOOST_TEST(largest - smallest <= layout.largest_sample_bytes, shards << " shards");
    }
}

BOOST_AUTO_TEST_CASE(shard_bytes_are_the_sum_of_their_members)
{
    const auto entries = imagenet_like(3, 20);
    const ShardLayout layout = lay_out_shards_by_count(entries, 4);
    for (const PackShard& shard : layout.shards) {
        std::uint64_t sum = kTarEndBytes;
        for (std::size_t i : shard.members)
            sum += tar_member_bytes(entries[i]);
        BOOST_TEST(shard.bytes == sum);
    }
}

BOOST_AUTO_TEST_CASE(directories_go_wherever_something_below_them_goes)
{
    auto entries = imagenet_like(3, 20);
    entries.push_back(dir("empty"));
    entries.push_back(dir("train/n01000/nested"));
    entries.push_back(dir("train/n01000/nested/deeper"));
    entries.push_back(file("train/n01000/nested/deeper/x.bin", 7));
    const ShardLayout layout = lay_out_shards_by_count(entries, 4);
    for (std::size_t s = 0; s < layout.shards.size(); ++s) {
        std::set<std::string> present;
        for (std::size_t i : layout.shards[s].members) {
            const std::string& path = entries[i].path;
            // Every parent is in the same shard, and before the entry.
            for (std::size_t slash = path.rfind('/'); slash != std::string::npos; slash = path.rfind('/', slash - 1)) {
                BOOST_TEST(present.count(path.substr(0, slash)) == 1u, path << " in shard " << s);
                if (slash == 0)
                    break;
            }
            present.insert(path);
        }
    }
    // A directory with nothing below it is a sample of its own: one shard.
    BOOST_TEST(shards_of(entries, layout, "empty").size() == 1u);
    BOOST_TEST(shards_of(entries, layout, "train/n01000/nested/deeper").size() == 1u);
    BOOST_TEST(shards_of(entries, layout, "train").size() == 4u);
}

BOOST_AUTO_TEST_CASE(members_sorted_by_path_in_each_shard)
{
    const auto entries = imagenet_like(3, 20);
    for (const auto& paths : paths_by_shard(entries, lay_out_shards_by_count(entries, 4)))
        BOOST_TEST(std::is_sorted(paths.begin(), paths.end()));
}

BOOST_AUTO_TEST_CASE(deterministic_whatever_the_input_order)
{
    const auto entries = imagenet_like(4, 30);
    auto reversed = entries;
    std::reverse(reversed.begin(), reversed.end());
    auto rotated = entries;
    std::rotate(rotated.begin(), rotated.begin() + 37, rotated.end());
    const auto expected = paths_by_shard(entries, lay_out_shards_by_count(entries, 5));
    BOOST_TEST((paths_by_shard(entries, lay_out_shards_by_count(entries, 5)) == expected));
    BOOST_TEST((paths_by_shard(reversed, lay_out_shards_by_count(reversed, 5)) == expected));
    BOOST_TEST((paths_by_shard(rotated, lay_out_shards_by_count(rotated, 5)) == expected));
}

BOOST_AUTO_TEST_CASE(equal_samples_go_round_robin_so_classes_spread_exactly)
{
    std::vector<PackEntry> entries;
    for (const std::string cls : {"a", "b", "c"}) {
        entries.push_back(dir(cls));
        for (int s = 0; s < 40; ++s)
            entries.push_back(file(cls + "/" + std::to_string(100 + s) + ".jpg", 1000));
    }
    const ShardLayout layout = lay_out_shards_by_count(entries, 4);
    for (const PackShard& shard : layout.shards) {
        std::map<std::string, int> per_class;
        for (std::size_t i : shard.members)
            if (entries[i].type == PackEntryType::File)
                ++per_class[entries[i].path.substr(0, 1)];
        BOOST_TEST(per_class["a"] == 10);
        BOOST_TEST(per_class["b"] == 10);
        BOOST_TEST(per_class["c"] == 10);
    }
}

BOOST_AUTO_TEST_CASE(classes_spread_within_twice_the_largest_sample)
{
    const auto entries = imagenet_like(6, 50);
    const std::size_t shards = 4;
    const ShardLayout layout = lay_out_shards_by_count(entries, shards);
    std::map<std::string, std::vector<std::uint64_t>> class_bytes;  // class -> bytes per shard
    for (std::size_t s = 0; s < shards; ++s)
        for (std::size_t i : layout.shards[s].members) {
            auto& per_shard = class_bytes[class_of(entries[i].path)];
            per_shard.resize(shards);
            per_shard[s] += tar_member_bytes(entries[i]);
        }
    class_bytes.erase("");
    BOOST_TEST(class_bytes.size() == 6u);
    for (const auto& [cls, per_shard] : class_bytes) {
        const auto [low, high] = std::minmax_element(per_shard.begin(), per_shard.end());
        BOOST_TEST(*low > 0u, cls << " missing from a shard");
        BOOST_TEST(*high - *low <= 2 * layout.largest_sample_bytes, cls);
    }
}

BOOST_AUTO_TEST_CASE(more_shards_than_samples_gives_one_shard_per_sample)
{
    const std::vector<PackEntry> entries = {dir("d"), file("d/1.jpg", 5), file("d/1.cls", 1), file("d/2.jpg", 5),
                                            file("d/3.jpg", 5)};
    const ShardLayout layout = lay_out_shards_by_count(entries, 10);
    BOOST_TEST(layout.shards.size() == 3u);  // the caller says so: 3 samples, not 10 shards
    BOOST_TEST(layout.sample_count == 3u);
    for (const PackShard& shard : layout.shards)
        BOOST_TEST(shard.samples == 1u);
    // An empty tree still gives one (empty) shard.
    const ShardLayout empty = lay_out_shards_by_count({}, 4);
    BOOST_TEST(empty.shards.size() == 1u);
    BOOST_TEST(empty.shards[0].members.empty());
    BOOST_TEST(empty.shards[0].bytes == kTarEndBytes);
    BOOST_TEST(test::error_of([] { lay_out_shards_by_count({}, 0); }) != "");
}

BOOST_AUTO_TEST_CASE(by_size_uses_few_shards_none_too_large)
{
    const auto entries = imagenet_like(3, 100);
    std::uint64_t total = 0;
    for (const PackEntry& e : entries)
        total += tar_member_bytes(e);
    for (const std::uint64_t limit : {200000ull, 500000ull, 1000000ull, 100000000ull}) {
        const ShardLayout layout = lay_out_shards_by_size(entries, limit);
        for (const PackShard& shard : layout.shards)
            BOOST_TEST(shard.bytes <= limit, limit);
        // Not wasteful: the balance bound (largest <= average + largest
        // sample) says this many shards always fit; one more for the
        // directories each shard repeats.
        const std::uint64_t enough =
            (total + limit - layout.largest_sample_bytes - 1) / (limit - layout.largest_sample_bytes);
        BOOST_TEST(layout.shards.size() >= (total + limit - 1) / limit, limit);
        BOOST_TEST(layout.shards.size() <= enough + 1, limit);
    }
    BOOST_TEST(lay_out_shards_by_size(entries, 100000000ull).shards.size() == 1u);
}

BOOST_AUTO_TEST_CASE(by_size_names_a_sample_too_large_for_any_shard)
{
    const std::vector<PackEntry> entries = {dir("d"), file("d/small.jpg", 100), file("d/huge.jpg", 5000000)};
    const std::string message = test::error_of([&] { lay_out_shards_by_size(entries, 1000000); });
    BOOST_TEST(message.find("'d/huge'") != std::string::npos, message);
    BOOST_TEST(message.find("does not fit") != std::string::npos, message);
}

BOOST_AUTO_TEST_SUITE_END()
