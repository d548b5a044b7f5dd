// The transfer to a shared tier (stager/transfer/own_chunks): each rank reads and
// writes its own chunks, in parts of at most 1 MiB, into one tree; the
// ranks together make the whole copy.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
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

// A tree walked while it moves to a shared tier: one copier per rank takes
// the segments as they come, and the chunks are numbered over them all, so
// that a segment of an odd number of chunks does not give rank 0 the first
// chunk of every segment.
BOOST_AUTO_TEST_CASE(a_copier_takes_parts_as_they_come_numbering_chunks_over_them_all)
{
    test::TempDir dir;
    for (const char* src : {"a", "b"}) {
        ::mkdir((dir / src).c_str(), 0755);
        for (unsigned i = 0; i < 5; ++i)
            dir.write(std::string(src) + "/f" + std::to_string(i), pattern((1u << 20) + 17 * i, i));
    }
    const Plan a = build_plan(dataset_at(dir / "a")), b = build_plan(dataset_at(dir / "b"));
    ExchangeOptions options;
    options.chunk_size = 2u << 20;
    options.readers = 2;
    options.writers = 1;
    const std::vector<Chunk> chunks_a = layout_chunks(a, options.chunk_size),
                             chunks_b = layout_chunks(b, options.chunk_size);
    BOOST_REQUIRE(chunks_a.size() % 2 == 1);
    // Rank r owns the chunks numbered r, r + 2, ... over a's then b's.
    std::uint64_t expected[2] = {0, 0};
    std::size_t number = 0;
    for (const auto* chunks : {&chunks_a, &chunks_b})
        for (const Chunk& chunk : *chunks)
            expected[number++ % 2] += chunk.bytes;
    WriterOptions shared;
    shared.shared = true;
    TreeWriter a0(a, dir / "copy-a", shared), a1(a, dir / "copy-a", shared);
    TreeWriter b0(b, dir / "copy-b", shared), b1(b, dir / "copy-b", shared);
    a0.create_skeleton();
    b0.create_skeleton();
    TreeWriter* writers[2][2] = {{&a0, &b0}, {&a1, &b1}};
    for (int rank = 0; rank < 2; ++rank) {
        OwnChunkCopier copier(rank, 2, options);
        const std::size_t part_a = copier.add({&a, writers[rank][0], &chunks_a});
        const std::size_t part_b = copier.add({&b, writers[rank][1], &chunks_b});
        copier.finish();
        BOOST_TEST(copier.part_done(part_a));
        BOOST_TEST(copier.part_done(part_b));
        BOOST_TEST(copier.bytes_read() == expected[rank]);
    }
    for (TreeWriter* writer : {&a0, &a1, &b0, &b1})
        writer->finish_split_files();
    a0.finish();
    b0.finish();
    for (const char* src : {"a", "b"})
        for (unsigned i = 0; i < 5; ++i)
            BOOST_TEST(content_of(dir / ("copy-" + std::string(src) + "/f" + std::to_string(i))) ==
                       content_of(dir / (std::string(src) + "/f" + std::to_string(i))));
}

BOOST_AUTO_TEST_CASE(a_failure_in_a_copier_thread_is_rethrown_and_stops_the_others)
{
    test::TempDir dir;
    ::mkdir((dir / "src").c_str(), 0755);
    for (unsigned i = 0; i < 8; ++i)
        dir.write("src/f" + std::to_string(i), pattern(70000, i));
    const Plan plan = build_plan(dataset_at(dir / "src"));
    ::unlink((dir / "src/f3").c_str());  // gone since planned
    ExchangeOptions options;
    options.chunk_size = 100000;
    WriterOptions shared;
    shared.shared = true;
    TreeWriter writer(plan, dir / "copy", shared);
    writer.create_skeleton();
    const std::vector<Chunk> chunks = layout_chunks(plan, options.chunk_size);
    OwnChunkCopier copier(0, 1, options);
    const std::size_t part = copier.add({&plan, &writer, &chunks});
    BOOST_CHECK_THROW(copier.finish(), Error);
    BOOST_TEST(!copier.part_done(part));
}

BOOST_AUTO_TEST_SUITE_END()
