#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "stager/plan/plan.hpp"
#include "stager/transfer/chunks.hpp"
#include "stager/transfer/source_reader.hpp"
#include "stager/transfer/tree_writer.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
using test::content_of;
using test::dataset_at;

// A small tree with every kind of entry the stager handles.
void make_tree(const test::TempDir& dir)
{
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "src/sub dir").c_str(), 0750);
    mkdir((dir / "src/empty").c_str(), 0555);  // read-only: must still be created and filled
    dir.write("src/big.bin", std::string(10000, 'b') + std::string(5000, 'c'));
    dir.write("src/sub dir/naïve.txt", "hello");
    dir.write("src/zero", "");
    chmod((dir / "src/sub dir/naïve.txt").c_str(), 0604);
    BOOST_REQUIRE(symlink("sub dir/naïve.txt", (dir / "src/link").c_str()) == 0);
    const struct timespec t[2] = {{1600000000, 0}, {1600000000, 0}};
    utimensat(AT_FDCWD, (dir / "src/big.bin").c_str(), t, 0);
}
// The plan's tree read from its source and written into dest in chunks of
// 4 KiB, as one rank alone stages it; returns the bytes read.
std::uint64_t copy_with_plan(const Plan& plan, const std::string& dest, WriterOptions options = {})
{
    SourceReader reader(plan);
    TreeWriter writer(plan, dest, options);
    writer.create_skeleton();
    std::vector<char> buffer(4096);
    for (const Chunk& chunk : layout_chunks(plan, 4096)) {
        reader.read(chunk, buffer.data());
        writer.write(chunk, buffer.data());
    }
    writer.finish();
    return reader.bytes_read();
}
}  // namespace

BOOST_AUTO_TEST_SUITE(plan)

BOOST_AUTO_TEST_CASE(walk_is_sorted_and_complete)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    BOOST_TEST(to_string(plan.format) == "dir");
    BOOST_TEST(!plan.single_file);
    std::vector<std::string> paths;
    for (const Entry& e : plan.entries)
        paths.push_back(e.path);
    BOOST_TEST(paths == std::vector<std::string>({"big.bin", "empty", "link", "sub dir", "sub dir/naïve.txt", "zero"}),
               boost::test_tools::per_element());
    BOOST_TEST(plan.total_bytes() == 15005u);
    BOOST_TEST(plan.file_count() == 4u);  // files and the symlink
    BOOST_TEST(plan.entries[2].target == "sub dir/naïve.txt");
    BOOST_TEST(plan.entries[0].mtime_sec == 1600000000);
}

BOOST_AUTO_TEST_CASE(an_unfinished_copy_is_finished_from_its_part_still_to_write)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    copy_with_plan(plan, dir / "dst");
    // Cut off: big.bin (removed by the caller, as a half-written file is),
    // the symlink not made yet; the read-only directory already finished
    // (nothing is written into it, and finish gives its mode again).
    BOOST_REQUIRE(unlink((dir / "dst/big.bin").c_str()) == 0);
    BOOST_REQUIRE(unlink((dir / "dst/link").c_str()) == 0);
    std::vector<char> wanted(plan.entries.size(), 0);
    wanted[0] = wanted[2] = 1;  // big.bin, link
    const Plan part = plan_part(plan, wanted);
    BOOST_TEST(part.entries.size() == 4u);  // the two, and the directories "empty" and "sub dir"
    BOOST_TEST(part.total_bytes() == 15000u);
    WriterOptions options;
    options.continues = true;
    BOOST_TEST(copy_with_plan(part, dir / "dst", options) == 15000u);
    BOOST_TEST(content_of(dir / "dst/big.bin") == std::string(10000, 'b') + std::string(5000, 'c'));
    char target[64] = {};
    BOOST_TEST(readlink((dir / "dst/link").c_str(), target, sizeof target - 1) > 0);
    BOOST_TEST(std::string(target) == "sub dir/naïve.txt");
    struct stat st {};
    BOOST_TEST(stat((dir / "dst/empty").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0555u);
    BOOST_TEST(content_of(dir / "dst/sub dir/naïve.txt") == "hello");
    // Without `continues`, the directories there already are an error.
    BOOST_TEST(unlink((dir / "dst/big.bin").c_str()) == 0);
    BOOST_TEST(unlink((dir / "dst/link").c_str()) == 0);
    WriterOptions fresh;
    fresh.dest_exists = true;
    TreeWriter writer(part, dir / "dst", fresh);
    BOOST_CHECK_THROW(writer.create_skeleton(), Error);
}

BOOST_AUTO_TEST_CASE(a_file_cut_off_mid_way_is_written_from_the_prefix_held)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    copy_with_plan(plan, dir / "dst");
    // big.bin (entry 0) cut off after 6,000 of its 15,000 bytes.
    BOOST_REQUIRE(truncate((dir / "dst/big.bin").c_str(), 6000) == 0);
    BOOST_REQUIRE(unlink((dir / "dst/link").c_str()) == 0);
    std::vector<char> wanted(plan.entries.size(), 0);
    wanted[0] = wanted[2] = 1;  // big.bin, link
    const Plan part = plan_part(plan, wanted, {{0, 6000}});
    BOOST_REQUIRE(part.held_prefixes.size() == 1u);
    BOOST_TEST(part.held_prefixes[0].entry == 0u);
    BOOST_TEST(part.bytes_to_write() == 9000u);
    const std::vector<Chunk> chunks = layout_chunks(part, 4096);
    BOOST_REQUIRE(!chunks.empty());
    BOOST_TEST(chunks.front().pieces.front().offset == 6000u);
    WriterOptions options;
    options.continues = true;
    // Only the rest is read, and the file is whole, with its mtime.
    BOOST_TEST(copy_with_plan(part, dir / "dst", options) == 9000u);
    BOOST_TEST(content_of(dir / "dst/big.bin") == std::string(10000, 'b') + std::string(5000, 'c'));
    struct stat st {};
    BOOST_TEST(stat((dir / "dst/big.bin").c_str(), &st) == 0);
    BOOST_TEST(st.st_mtime == 1600000000);
    // A prefix of an entry not wanted, or of the whole file, is no prefix.
    BOOST_TEST(plan_part(plan, wanted, {{4, 3}}).held_prefixes.empty());
    BOOST_TEST(plan_part(plan, wanted, {{0, 15000}}).held_prefixes.empty());
}

BOOST_AUTO_TEST_CASE(single_file_and_shards)
{
    test::TempDir dir;
    dir.write("one.bin", "12345");
    const Plan file = build_plan(dataset_at(dir / "one.bin"));
    BOOST_TEST(file.single_file);
    BOOST_TEST(file.source_root == dir.path());
    BOOST_TEST(file.entries[0].path == "one.bin");
    dir.write("s-1.tar", "bb");
    dir.write("s-0.tar", "a");
    const Plan shards = build_plan(dataset_at(dir / "s-*.tar"));
    BOOST_TEST(to_string(shards.format) == "tar");
    BOOST_TEST(shards.entries.size() == 2u);
    BOOST_TEST(shards.entries[0].path == "s-0.tar");
    BOOST_TEST(test::error_of([&] { build_plan(dataset_at(dir / "none-*.tar")); }).find("no tar shards match") == 0u);
    BOOST_TEST(test::error_of([&] { build_plan(dataset_at(dir / "missing")); }).find("No such file") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(special_files_are_refused)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    mkfifo((dir / "src/pipe").c_str(), 0644);
    BOOST_TEST(test::error_of([&] { build_plan(dataset_at(dir / "src")); }).find("not a file, directory or symlink") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(serialization_round_trips_and_rejects_garbage)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    const Plan back = deserialize(serialize(plan));
    BOOST_TEST(back.entries.size() == plan.entries.size());
    BOOST_TEST(back.source_root == plan.source_root);
    BOOST_TEST(back.entries[4].path == "sub dir/naïve.txt");
    BOOST_TEST(back.entries[4].mode == 0604u);
    const std::string bytes = serialize(plan);
    BOOST_CHECK_THROW(deserialize(bytes.substr(0, bytes.size() - 3)), Error);
    BOOST_CHECK_THROW(deserialize("nonsense"), Error);
    // Canonical: another walk (threads find entries in another order) and
    // the plan rebuilt from the bytes give the same bytes.
    BOOST_TEST(serialize(build_plan(dataset_at(dir / "src"), 4)) == bytes);
    BOOST_TEST(serialize(back) == bytes);
}

BOOST_AUTO_TEST_CASE(the_compact_plan_round_trips_odd_names_symlinks_and_empty_files)
{
    Plan plan;
    plan.source_root = "/src";
    plan.format = Format::Dir;
    const std::string odd = std::string("tab\tnew\nline \xff\x01 ") + std::string(300, 'x');
    plan.entries.add(EntryType::Dir, "d", 0750, 5, 6, 0);
    plan.entries.add(EntryType::File, "d/" + odd, 04755, -1, 999999999, 123456789012345ull);
    plan.entries.add(EntryType::File, "d/empty", 0600, 7, 0, 0);
    plan.entries.add(EntryType::Symlink, "d/link", 0777, 8, 1, 0, "../" + odd);
    plan.entries.add(EntryType::Symlink, "d/to-nothing", 0777, 8, 1, 0, "");
    const Plan back = deserialize(serialize(plan));
    BOOST_REQUIRE(back.entries.size() == 5u);
    BOOST_TEST(back.source_root == "/src");
    BOOST_TEST(to_string(back.format) == "dir");
    BOOST_TEST(back.entries[1].path == "d/" + odd);
    BOOST_TEST(back.entries[1].mode == 04755u);
    BOOST_TEST(back.entries[1].mtime_sec == -1);
    BOOST_TEST(back.entries[1].mtime_nsec == 999999999u);
    BOOST_TEST(back.entries[1].size == 123456789012345ull);
    BOOST_TEST(back.entries[2].size == 0u);
    BOOST_TEST(back.entries[3].target == "../" + odd);
    BOOST_TEST(back.entries[3].size == 0u);  // a symlink has no data, whatever its target's length
    BOOST_TEST(back.entries[4].target == "");
    BOOST_TEST(back.total_bytes() == 123456789012345ull);
    BOOST_TEST(back.file_count() == 4u);
    // What iteration and the accessors see is the same.
    std::size_t i = 0;
    for (const Entry& e : back.entries)
        BOOST_TEST(e.path == back.entries.path(i++));
}

BOOST_AUTO_TEST_CASE(a_plan_of_another_version_or_with_entries_outside_its_paths_is_refused)
{
    Plan plan;
    plan.entries.add(EntryType::File, "a", 0644, 1, 0, 1);
    std::string bytes = serialize(plan);
    std::string v1 = bytes;
    v1[0] = '1';  // "DLS1", the format of each entry's fields
    BOOST_TEST(test::error_of([&] { deserialize(v1); }).find("bad magic") != std::string::npos);
    PlanReceiver in = receive_header(wire_header(plan));
    BOOST_REQUIRE(in.records.size() == 1u);
    in.records[0] = plan.entries.record(0);
    in.records[0].path_at = 5;  // past the arena's one byte
    in.arena = "a";
    BOOST_TEST(test::error_of([&] { in.adopt_blocks(); }).find("outside its paths") != std::string::npos);
    BOOST_TEST(test::error_of([&] { plan.entries.add(EntryType::File, "", 0644, 1, 0, 1); }).find("without a path") !=
               std::string::npos);
    BOOST_TEST(test::error_of([&] {
                   plan.entries.add(EntryType::File, std::string(5000, 'a'), 0644, 1, 0, 1);
               }).find("longer than PATH_MAX") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_identity_changes_with_a_file_size_or_mtime_and_only_then)
{
    test::TempDir dir;
    make_tree(dir);
    const auto plan_now = [&] { return build_plan(dataset_at(dir / "src")); };
    const std::string first = source_identity(plan_now());
    BOOST_TEST(first.size() == 16u);
    BOOST_TEST(source_identity(plan_now()) == first);
    const struct timespec old[2] = {{1000, 0}, {1000, 0}};
    utimensat(AT_FDCWD, (dir / "src/sub dir/naïve.txt").c_str(), old, 0);
    const std::string touched = source_identity(plan_now());
    BOOST_TEST(touched != first);
    dir.write("src/zero", "aaaaa");
    BOOST_TEST(source_identity(plan_now()) != touched);
}

BOOST_AUTO_TEST_CASE(the_identity_of_the_serialized_plan_is_the_plans)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    BOOST_TEST(source_identity_of(serialize(plan)) == source_identity(plan));
    const std::string before = source_identity(plan);
    BOOST_REQUIRE(unlink((dir / "src/zero").c_str()) == 0);  // one file fewer
    BOOST_TEST(source_identity(build_plan(dataset_at(dir / "src"))) != before);
}

BOOST_AUTO_TEST_CASE(chunks_pack_small_files_and_split_large_ones)
{
    Plan plan;
    for (std::uint64_t size : {3u, 0u, 10u, 4u}) {
        Entry e;
        e.path = "f" + std::to_string(plan.entries.size());
        e.size = size;
        plan.entries.add(e);
    }
    const auto chunks = layout_chunks(plan, 8);
    BOOST_REQUIRE(chunks.size() == 3u);  // 17 bytes in chunks of 8
    BOOST_TEST(chunks[0].bytes == 8u);
    BOOST_TEST(chunks[0].pieces.size() == 2u);  // f0 whole, f2 [0,5)
    BOOST_TEST(chunks[1].pieces[0].entry == 2u);
    BOOST_TEST(chunks[1].pieces[0].offset == 5u);
    BOOST_TEST(chunks[2].bytes == 1u);
    std::uint64_t total = 0;
    for (const auto& c : chunks)
        total += c.bytes;
    BOOST_TEST(total == 17u);
}

// Many tiny files: a chunk closes at kMostFilesPerChunk files, well under
// its size; every byte still comes once, in plan order, and a large file
// still spans chunks.
BOOST_AUTO_TEST_CASE(a_chunk_of_tiny_files_closes_at_its_file_count)
{
    Plan plan;
    for (int i = 0; i < 600; ++i) {
        Entry e;
        e.path = "f" + std::to_string(1000 + i);
        e.size = i == 300 ? 20000 : 10;
        plan.entries.add(e);
    }
    const auto chunks = layout_chunks(plan, 1 << 20);
    BOOST_REQUIRE(chunks.size() == 3u);  // 600 pieces: 256, 256, 88
    BOOST_TEST(chunks[0].pieces.size() == kMostFilesPerChunk);
    BOOST_TEST(chunks[1].pieces.size() == kMostFilesPerChunk);
    std::uint32_t next = 0;
    std::uint64_t total = 0;
    for (const auto& c : chunks) {
        for (const Piece& p : c.pieces)
            BOOST_TEST(p.entry == next++);
        total += c.bytes;
    }
    BOOST_TEST(total == plan.total_bytes());
    // The size still closes a chunk first when it comes first.
    BOOST_TEST(layout_chunks(plan, 64).size() > 300u);
}

BOOST_AUTO_TEST_CASE(reader_and_writer_reproduce_the_tree)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    const std::uint64_t bytes_read = copy_with_plan(plan, dir / "dst");
    BOOST_TEST(bytes_read == 15005u);
    BOOST_TEST(content_of(dir / "dst/big.bin") == content_of(dir / "src/big.bin"));
    BOOST_TEST(content_of(dir / "dst/sub dir/naïve.txt") == "hello");
    struct stat st {};
    lstat((dir / "dst/sub dir/naïve.txt").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0604u);
    lstat((dir / "dst/empty").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0555u);
    lstat((dir / "dst/sub dir").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0750u);
    lstat((dir / "dst/big.bin").c_str(), &st);
    BOOST_TEST(st.st_mtim.tv_sec == 1600000000);
    lstat((dir / "dst/zero").c_str(), &st);
    BOOST_TEST(st.st_size == 0);
    char target[64] = {};
    BOOST_TEST(readlink((dir / "dst/link").c_str(), target, sizeof target - 1) > 0);
    BOOST_TEST(std::string(target) == "sub dir/naïve.txt");
    chmod((dir / "dst/empty").c_str(), 0755);  // let TempDir clean up as non-root
}

BOOST_AUTO_TEST_CASE(a_source_that_shrinks_is_an_error_and_incomplete_files_are_caught)
{
    test::TempDir dir;
    make_tree(dir);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    BOOST_REQUIRE(truncate((dir / "src/big.bin").c_str(), 100) == 0);
    SourceReader reader(plan);
    std::vector<char> buffer(1 << 16);
    const auto chunks = layout_chunks(plan, 1 << 16);
    BOOST_TEST(test::error_of([&] { reader.read(chunks[0], buffer.data()); }) ==
               dir / "src/big.bin" + " changed since it was planned (size 15000 -> 100): run again");

    TreeWriter writer(plan, dir / "dst");
    writer.create_skeleton();
    BOOST_TEST(test::error_of([&] { writer.finish(); }).find("received 0 of 15000 bytes") != std::string::npos);
    chmod((dir / "dst/empty").c_str(), 0755);
}

// Small files are created with their mode when the umask leaves it whole,
// and get it with fchmod when it would not: the copy's modes are the
// source's either way, a read-only file included.
BOOST_AUTO_TEST_CASE(small_files_keep_their_modes_whatever_the_umask)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    dir.write("src/shared", "rw for all");
    dir.write("src/readonly", "r for all");
    chmod((dir / "src/shared").c_str(), 0666);
    chmod((dir / "src/readonly").c_str(), 0444);
    const mode_t old_mask = umask(022);
    const Plan plan = build_plan(dataset_at(dir / "src"));
    copy_with_plan(plan, dir / "dst");
    umask(old_mask);
    struct stat st {};
    lstat((dir / "dst/shared").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0666u);
    lstat((dir / "dst/readonly").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0444u);
    BOOST_TEST(content_of(dir / "dst/readonly") == "r for all");
}

BOOST_AUTO_TEST_SUITE_END()
