// The reader's side of a plan made earlier: several opens at once give the
// same bytes, and a file that is not what the plan says stops staging.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <memory>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "stager/plan/plan.hpp"
#include "stager/plan/source_check.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/source_reader.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
// A flat directory of small files of different sizes, in two directories.
void make_small_files(const test::TempDir& dir, int count)
{
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "src/b").c_str(), 0755);
    for (int i = 0; i < count; ++i)
        dir.write((i % 3 ? "src/" : "src/b/") + std::to_string(i) + ".jpg",
                  std::string(static_cast<std::size_t>(100 + i * 7), static_cast<char>('a' + i % 26)));
}

std::string read_all(SourceReader& reader, const Plan& plan, std::uint64_t chunk_size)
{
    std::string all;
    std::vector<char> buffer(chunk_size);
    for (const Chunk& chunk : layout_chunks(plan, chunk_size)) {
        reader.read(chunk, buffer.data());
        all.append(buffer.data(), chunk.bytes);
    }
    return all;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(source_reader)

BOOST_AUTO_TEST_CASE(many_opens_at_once_read_the_same_bytes_as_one)
{
    test::TempDir dir;
    make_small_files(dir, 200);
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    SourceReader one(plan, 1);
    const std::string expected = read_all(one, plan, 4096);
    BOOST_TEST(expected.size() == plan.total_bytes());
    for (unsigned opens : {2u, 8u, 64u}) {
        SourceReader many(plan, opens);
        BOOST_TEST((read_all(many, plan, 4096) == expected), "opens=" << opens);
        BOOST_TEST(many.bytes_read() == plan.total_bytes());
    }
    // A file split over chunks stays open from one chunk to the next.
    SourceReader small_chunks(plan, 8);
    BOOST_TEST((read_all(small_chunks, plan, 4096 + 61) == expected));
}

// One reader for the segments of a tree walked while it moves (the
// exchange's parts): each plan's bytes, as a reader of its own reads them.
// Here every plan holds one file, its entry 0: the file the reader holds
// open from the plan before has the same number and must not be read.
BOOST_AUTO_TEST_CASE(a_reader_goes_from_one_plan_to_the_next)
{
    test::TempDir dir;
    make_small_files(dir, 60);
    const Plan whole = build_plan(test::dataset_at(dir / "src"));
    std::vector<Plan> parts;
    for (std::size_t i = 0; i < whole.entries.size(); ++i) {
        if (whole.entries.type(i) != EntryType::File)
            continue;
        parts.emplace_back();
        parts.back().source_root = whole.source_root;
        parts.back().entries.add(whole.entries[i]);
    }
    BOOST_REQUIRE(parts.size() == 60u);
    std::string want, got;
    // One plan object for them all, as a segment freed and the next made in
    // its place: the reader is told, whatever the address.
    Plan current = parts.front();
    SourceReader shared(current, 8);
    for (const Plan& part : parts) {
        SourceReader own(part, 8);
        want += read_all(own, part, 200);  // 200: files go on into the next chunk
        current = part;
        shared.use_plan(current);
        got += read_all(shared, current, 200);
    }
    BOOST_TEST(want.size() == whole.total_bytes());
    BOOST_TEST((got == want));
    BOOST_TEST(shared.bytes_read() == whole.total_bytes());
}

// The walked transfer frees a finished segment before the reader is given
// the next: the reader must not look at the plan it had (the sanitizer
// build catches a read of it).
BOOST_AUTO_TEST_CASE(a_reader_needs_nothing_of_a_plan_freed_before_the_next)
{
    test::TempDir dir;
    make_small_files(dir, 30);
    const Plan whole = build_plan(test::dataset_at(dir / "src"));
    auto first = std::make_unique<Plan>(whole);
    SourceReader reader(*first, 8);
    const std::string want = read_all(reader, *first, 300);
    first.reset();
    const Plan next = whole;
    reader.use_plan(next);
    BOOST_TEST((read_all(reader, next, 300) == want));
}

BOOST_AUTO_TEST_CASE(a_chunk_of_many_small_files_keeps_few_open)
{
    // 300 files in one chunk, 8 opens at once, 32 descriptors allowed.
    test::TempDir dir;
    make_small_files(dir, 300);
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    const std::string text = test::in_child([&] {
        const rlimit limit{32, 32};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        SourceReader reader(plan, 8);
        return "bytes=" + std::to_string(read_all(reader, plan, 1 << 20).size());
    });
    BOOST_TEST(text == "bytes=" + std::to_string(plan.total_bytes()));
}

BOOST_AUTO_TEST_CASE(a_file_rewritten_since_planning_stops_the_read_with_one_line)
{
    test::TempDir dir;
    make_small_files(dir, 40);
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    // Same size, new content, a later mtime: only the mtime tells.
    const struct timespec later[2] = {{1700000000, 5}, {1700000000, 5}};
    BOOST_REQUIRE(utimensat(AT_FDCWD, (dir / "src/7.jpg").c_str(), later, 0) == 0);
    SourceReader reader(plan, 8);
    const std::string message = test::error_of([&] { read_all(reader, plan, 1 << 20); });
    BOOST_TEST(message.find(dir / "src/7.jpg" + " changed since it was planned (mtime ") == 0u, message);
    BOOST_TEST(message.find(" -> 2023-11-14 22:13:20.000000005 UTC): run again") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(a_file_gone_since_planning_is_named)
{
    test::TempDir dir;
    make_small_files(dir, 40);
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    unlink((dir / "src/b/30.jpg").c_str());
    SourceReader reader(plan, 4);
    BOOST_TEST(test::error_of([&] { read_all(reader, plan, 1 << 20); }) ==
               dir / "src/b/30.jpg" + " changed since it was planned (gone): run again");
}

// Reads that prove a plan: a file not as planned (rewritten, gone,
// replaced by a directory) does not stop them.  It is counted once, the
// first kept as the example, and from then on nothing more is opened: its
// bytes and all after read as zeros (the copy is to be discarded).
BOOST_AUTO_TEST_CASE(proving_reads_count_a_change_and_read_no_more)
{
    test::TempDir dir;
    make_small_files(dir, 40);
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    SourceReader clean(plan, 8);
    const std::string want = read_all(clean, plan, 1 << 20);
    // The plan is sorted by path: 8.jpg comes after 1.jpg ... 7.jpg; the
    // bytes before its first are the files before it.
    std::size_t first = 0, at = 0;
    for (std::size_t i = 0; i < plan.entries.size(); ++i) {
        if (plan.entries.path(i) == "8.jpg")
            first = at;
        at += plan.entries.type(i) == EntryType::File ? plan.entries.record(i).size : 0;
    }
    BOOST_REQUIRE(first > 0);
    dir.write("src/8.jpg", std::string(156, 'X') + "more");  // was 156 bytes of 'i'
    unlink((dir / "src/b/30.jpg").c_str());
    ProvingReads changes;
    int first_changes = 0;
    changes.on_first_change = [&first_changes] { ++first_changes; };
    SourceReader reader(plan, 8, &changes);
    const std::string got = read_all(reader, plan, 64);  // small chunks: files span them
    BOOST_TEST(changes.count() >= 1u);
    BOOST_TEST(first_changes == 1);
    BOOST_TEST(changes.example().find(dir / "src/") == 0u, changes.example());
    BOOST_REQUIRE(got.size() == want.size());
    BOOST_TEST(got.compare(0, first, want, 0, first) == 0);               // before the change: as the source
    BOOST_TEST(got.find_first_not_of('\0', first) == std::string::npos);  // from it on: zeros
    // The same file found by two readers counts once.
    changes.add(7, "/p/x", "gone");
    changes.add(7, "/p/x", "gone");
    BOOST_TEST(first_changes == 1);
}

// No read opens an empty file: a file empty at the scan and written to
// since is found by a stat of the empty files alone.
BOOST_AUTO_TEST_CASE(an_empty_file_written_to_since_planning_is_found_by_the_empty_files_check)
{
    test::TempDir dir;
    make_small_files(dir, 10);
    dir.write("src/empty", "");
    const Plan plan = build_plan(test::dataset_at(dir / "src"));
    BOOST_TEST(check_source(plan, 0, 1, 4, Checked::EmptyFiles).changed == 0u);
    dir.write("src/1.jpg", "rewritten");  // not empty: the reads' to find
    BOOST_TEST(check_source(plan, 0, 1, 4, Checked::EmptyFiles).changed == 0u);
    BOOST_TEST(check_source(plan, 0, 1, 4, Checked::EmptyFiles).checked == 1u);
    dir.write("src/empty", "8 bytes!");
    const SourceDrift drift = check_source(plan, 0, 1, 4, Checked::EmptyFiles);
    BOOST_TEST(drift.changed == 1u);
    BOOST_TEST(drift.example == dir / "src/empty" + ": size 0 -> 8", drift.example);
}

// Opens turn parallel when most of a group is slow (a parallel file
// system's round trips), not when one open of it was: a thread preempted on
// a busy node once made a group look slow, and the reader stayed parallel.
BOOST_AUTO_TEST_CASE(opens_turn_parallel_on_the_median_not_one_slow_open)
{
    std::vector<float> one_preempted{3, 4, 2500, 3, 5, 4, 3, 4};
    BOOST_TEST(!opens_in_parallel(false, one_preempted, 100));
    std::vector<float> round_trips{1100, 950, 1200, 4, 1000, 1300, 990, 1050};
    BOOST_TEST(opens_in_parallel(false, round_trips, 100));
    // Back to one after the other only well under the threshold: no
    // flapping between the modes on opens near it.
    std::vector<float> near{70, 80, 60, 75};
    BOOST_TEST(opens_in_parallel(true, near, 100));
    BOOST_TEST(!opens_in_parallel(false, near, 100));
    std::vector<float> cached{3, 2, 900, 4};
    BOOST_TEST(!opens_in_parallel(true, cached, 100));
    std::vector<float> none;
    BOOST_TEST(opens_in_parallel(true, none, 100));
}

BOOST_AUTO_TEST_SUITE_END()
