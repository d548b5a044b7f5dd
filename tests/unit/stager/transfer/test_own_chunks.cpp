// The transfer to a shared tier (stager/transfer/own_chunks): each rank reads and
// writes its own chunks, in parts of at most 1 MiB, into one tree; the
// ranks together make the whole copy.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "stager/plan/plan.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/own_chunks.hpp"
#include "stager/transfer/tree_writer.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;
using test::dataset_at;

BOOST_AUTO_TEST_SUITE(own_chunks)

namespace {
using test::content_of;

// Bytes that differ at every offset: a misplaced part shows.
std::string pattern(std::size_t size, unsigned seed)
{
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i)
        s[i] = static_cast<char>((i * 131 + seed * 7 + i / 4099) & 0xff);
    return s;
}

void check_parts(const Chunk& chunk, const std::vector<Chunk>& parts, std::uint64_t most)
{
    std::vector<Piece> joined;
    std::uint64_t total = 0;
    for (const Chunk& part : parts) {
        BOOST_TEST(part.bytes <= most);
        BOOST_TEST(part.bytes > 0u);
        std::uint64_t sum = 0;
        for (const Piece& p : part.pieces) {
            sum += p.length;
            // Consecutive parts of one piece join again.
            if (!joined.empty() && joined.back().entry == p.entry &&
                joined.back().offset + joined.back().length == p.offset)
                joined.back().length += p.length;
            else
                joined.push_back(p);
        }
        BOOST_TEST(sum == part.bytes);
        total += part.bytes;
    }
    BOOST_TEST(total == chunk.bytes);
    BOOST_REQUIRE(joined.size() == chunk.pieces.size());
    for (std::size_t i = 0; i < joined.size(); ++i) {
        BOOST_TEST(joined[i].entry == chunk.pieces[i].entry);
        BOOST_TEST(joined[i].offset == chunk.pieces[i].offset);
        BOOST_TEST(joined[i].length == chunk.pieces[i].length);
    }
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_chunk_splits_into_parts_of_at_most_the_size_in_order)
{
    Chunk chunk;
    chunk.pieces = {{3, 5, (3u << 20) + 7}, {4, 0, 10}, {5, 0, 1u << 20}, {6, 100, 1}};
    for (const Piece& p : chunk.pieces)
        chunk.bytes += p.length;
    for (const std::uint64_t most : {std::uint64_t(1) << 20, std::uint64_t(3), std::uint64_t(4) << 20}) {
        const std::vector<Chunk> parts = split_chunk(chunk, most);
        BOOST_TEST(parts.size() == (chunk.bytes + most - 1) / most);
        check_parts(chunk, parts, most);
    }
    BOOST_TEST(split_chunk(Chunk{}, 1u << 20).empty());
}

BOOST_AUTO_TEST_CASE(two_ranks_make_one_whole_copy_with_files_split_between_them)
{
    test::TempDir dir;
    ::mkdir((dir / "src").c_str(), 0755);
    ::mkdir((dir / "src/d").c_str(), 0755);
    // Sizes around the 1 MiB part and the 2 MiB chunk used here: files cut
    // between parts, between chunks and so between ranks.
    const std::size_t sizes[] = {0, 1, 4096, (1u << 20) - 1, 1u << 20, (1u << 20) + 1, (5u << 20) + 3, 70000, 3};
    for (std::size_t i = 0; i < std::size(sizes); ++i)
        dir.write("src/" + std::string(i % 2 ? "d/" : "") + "f" + std::to_string(i), pattern(sizes[i], unsigned(i)));
    const Plan plan = build_plan(dataset_at(dir / "src"));
    const std::vector<Chunk> chunks = layout_chunks(plan, 2u << 20);
    BOOST_REQUIRE(chunks.size() > 3u);
    ExchangeOptions options;
    options.chunk_size = 2u << 20;
    options.readers = 2;
    options.writers = 1;
    WriterOptions shared;
    shared.shared = true;
    const std::string dest = dir / "copy";
    TreeWriter rank0(plan, dest, shared), rank1(plan, dest, shared);
    rank0.create_skeleton();
    std::uint64_t bytes = 0;
    bytes += copy_own_chunks(chunks, plan, rank0, 0, 2, options, nullptr).bytes_read;
    bytes += copy_own_chunks(chunks, plan, rank1, 1, 2, options, nullptr).bytes_read;
    BOOST_TEST(bytes == plan.total_bytes());
    rank0.finish_split_files();
    rank1.finish_split_files();
    rank0.finish();
    for (const Entry& e : plan.entries)
        if (e.type == EntryType::File)
            BOOST_TEST(content_of(dest + "/" + e.path) == content_of(dir / ("src/" + e.path)), e.path);
}

BOOST_AUTO_TEST_SUITE_END()
