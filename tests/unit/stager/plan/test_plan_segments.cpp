#include <boost/test/unit_test.hpp>

#include <regex>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "lib/error.hpp"
#include "stager/plan/plan.hpp"
#include "stager/plan/plan_segments.hpp"
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

std::string top_of(std::string_view path)
{
    return std::string(path.substr(0, path.find('/')));
}

// Every segment the walk hands out, in order.
std::vector<EntryList> all_segments(const std::string& source, SegmentLimits limits = {})
{
    SegmentedWalk walk(dataset_at(source), 4, limits);
    std::vector<EntryList> segments;
    for (EntryList segment; walk.next(segment);)
        segments.push_back(std::move(segment));
    return segments;
}

std::multiset<std::string> paths_of(const std::vector<EntryList>& segments)
{
    std::multiset<std::string> paths;
    for (const EntryList& segment : segments)
        for (std::size_t i = 0; i < segment.size(); ++i)
            paths.emplace(segment.path(i));
    return paths;
}

std::multiset<std::string> paths_of(const Plan& plan)
{
    std::multiset<std::string> paths;
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        paths.emplace(plan.entries.path(i));
    return paths;
}

// ImageNet's shape, small: `classes` directories of `files` files under
// src/PREFIX, with a file and a symlink at the top.
void make_classes(const test::TempDir& dir, const std::string& prefix, int classes, int files)
{
    for (int c = 0; c < classes; ++c) {
        const std::string cls = prefix + "n" + std::to_string(1000 + c);
        mkdir((dir / ("src/" + cls)).c_str(), 0755);
        for (int f = 0; f < files; ++f)
            dir.write("src/" + cls + "/img" + std::to_string(f) + ".JPEG", std::string(100 + f, 'x'));
    }
}
}  // namespace

BOOST_AUTO_TEST_SUITE(plan_segments)

BOOST_AUTO_TEST_CASE(segments_hold_the_walks_entries_each_unit_whole_and_more_units_each_time)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 40, 30);
    dir.write("src/LABELS.txt", "labels");
    BOOST_REQUIRE(symlink("LABELS.txt", (dir / "src/labels").c_str()) == 0);

    const std::vector<EntryList> segments = all_segments(dir / "src");
    BOOST_TEST(paths_of(segments) == paths_of(build_plan(dataset_at(dir / "src"))));
    // The first: the directories above the units (none here); the next the
    // files above them (the root's file and symlink).
    BOOST_REQUIRE(segments.size() >= 4u);
    BOOST_TEST(segments[0].size() == 0u);
    BOOST_TEST(segments[1].size() == 2u);
    // Each later one: whole units, sorted, each unit in one segment only.
    std::set<std::string> seen;
    std::size_t last_units = 0;
    for (std::size_t s = 2; s < segments.size(); ++s) {
        std::set<std::string> units;
        for (std::size_t i = 0; i < segments[s].size(); ++i) {
            units.insert(top_of(segments[s].path(i)));
            if (i > 0)
                BOOST_TEST((segments[s].path(i - 1) < segments[s].path(i)));
        }
        for (const std::string& unit : units)
            BOOST_TEST(seen.insert(unit).second);
        if (s + 1 < segments.size())
            BOOST_TEST(units.size() >= last_units);  // more each time, but for the rest at the end
        last_units = units.size();
    }
    BOOST_TEST(seen.size() == 40u);
}

// A shared tier's first copy staged while walking: its identity and
// contents file come from the segments put together, and must be the whole
// walk's byte for byte (else the next job would stage it again); its walked
// list is the segments one after another, cut off anywhere by a lost job.
BOOST_AUTO_TEST_CASE(segments_put_together_are_the_whole_walks_plan_byte_for_byte)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 20, 30);
    make_classes(dir, "deep/", 3, 5);
    dir.write("src/LABELS.txt", "labels");
    BOOST_REQUIRE(symlink("LABELS.txt", (dir / "src/labels").c_str()) == 0);
    SegmentLimits limits;
    limits.entries = 50;
    std::string walked;
    std::size_t after_first = 0;
    for (EntryList& segment : all_segments(dir / "src", limits)) {
        Plan part;
        part.format = Format::Dir;
        part.source_root = dir / "src";
        part.entries = std::move(segment);
        walked += serialize(part);
        after_first = after_first ? after_first : walked.size();
    }
    const Plan whole = build_plan(dataset_at(dir / "src"));
    BOOST_TEST(serialize(deserialize_segments(walked)) == serialize(whole));
    // An append cut off: what came before it counts.
    const Plan cut = deserialize_segments(walked.substr(0, after_first + 100));
    BOOST_TEST(cut.entries.size() == deserialize_segments(walked.substr(0, after_first)).entries.size());
    BOOST_TEST(cut.entries.size() < whole.entries.size());
    BOOST_TEST(deserialize_segments("").entries.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_segment_closes_at_its_limit_of_entries)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 20, 10);  // 11 entries a unit
    SegmentLimits limits;
    limits.entries = 25;
    const std::vector<EntryList> segments = all_segments(dir / "src", limits);
    for (std::size_t s = 1; s < segments.size(); ++s)
        BOOST_TEST(segments[s].size() <= 25u);
    BOOST_TEST(paths_of(segments).size() == 220u);
}

BOOST_AUTO_TEST_CASE(a_segment_holds_no_more_units_than_the_walk_gets_through_in_its_time)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 20, 3);  // 4 entries a unit
    SegmentLimits limits;
    limits.seconds = 1e-12;  // every unit takes longer: one unit a segment, whatever the walk's threads
    const std::vector<EntryList> segments = all_segments(dir / "src", limits);
    BOOST_TEST(segments.size() == 21u);
    for (std::size_t s = 1; s < segments.size(); ++s)
        BOOST_TEST(segments[s].size() == 4u);
}

BOOST_AUTO_TEST_CASE(the_walk_stays_one_segment_ahead_of_what_was_taken)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "gone").c_str(), 0755);
    make_classes(dir, "", 20, 2);
    SegmentLimits limits;
    limits.seconds = 1e-12;
    SegmentedWalk walk(dataset_at(dir / "src"), 2, limits);
    EntryList segment;
    BOOST_REQUIRE(walk.next(segment));  // above the units: nothing
    BOOST_REQUIRE(walk.next(segment));  // n1000
    usleep(200000);                     // a walk running ahead would be through all ten by now
    for (int c = 1005; c < 1010; ++c) {
        const std::string name = "n" + std::to_string(c);
        BOOST_REQUIRE(rename((dir / ("src/" + name)).c_str(), (dir / ("gone/" + name)).c_str()) == 0);
    }
    std::vector<std::string> walked;
    const std::string error = test::error_of([&] {
        while (walk.next(segment))
            walked.push_back(top_of(segment.path(0)));
    });
    BOOST_TEST((walked == std::vector<std::string>{"n1001", "n1002", "n1003", "n1004"}));
    BOOST_TEST(error.find("n1005") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_top_with_few_directories_is_cut_below_them)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "src/train").c_str(), 0755);
    mkdir((dir / "src/val").c_str(), 0750);
    make_classes(dir, "train/", 20, 3);
    make_classes(dir, "val/", 5, 3);
    dir.write("src/val/README", "r");

    const std::vector<EntryList> segments = all_segments(dir / "src");
    BOOST_TEST(paths_of(segments) == paths_of(build_plan(dataset_at(dir / "src"))));
    std::set<std::string> first;
    for (std::size_t i = 0; i < segments.at(0).size(); ++i)
        first.emplace(segments[0].path(i));
    BOOST_TEST((first == std::set<std::string>{"train", "val"}));
    BOOST_REQUIRE(segments.size() > 3u);
    BOOST_TEST(segments[1].size() == 1u);
    BOOST_TEST(segments[1].path(0) == "val/README");
}

// names_of(segment): its entries' paths, as a set.
std::set<std::string> names_of(const EntryList& segment)
{
    std::set<std::string> names;
    for (std::size_t i = 0; i < segment.size(); ++i)
        names.emplace(segment.path(i));
    return names;
}

BOOST_AUTO_TEST_CASE(a_few_directories_of_files_only_come_first_and_their_files_in_growing_slices)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 6, 20);
    const std::vector<EntryList> segments = all_segments(dir / "src");
    BOOST_TEST(paths_of(segments) == paths_of(build_plan(dataset_at(dir / "src"))));
    // The six directories first, then their 120 files: 8 (two names for
    // each of the walk's 4 threads), 16, 32, 64.
    BOOST_TEST(
        (names_of(segments.at(0)) == std::set<std::string>{"n1000", "n1001", "n1002", "n1003", "n1004", "n1005"}));
    BOOST_REQUIRE(segments.size() == 5u);
    const std::size_t sizes[] = {8, 16, 32, 64};
    for (std::size_t s = 1; s < segments.size(); ++s) {
        BOOST_TEST(segments[s].size() == sizes[s - 1]);
        BOOST_TEST(segments[s].non_dir_count() == segments[s].size());
    }
}

BOOST_AUTO_TEST_CASE(a_flat_directory_is_walked_a_slice_at_a_time_one_ahead_of_what_was_taken)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "gone").c_str(), 0755);
    for (int f = 100; f < 200; ++f)
        dir.write("src/f" + std::to_string(f), "x");
    SegmentLimits limits;
    limits.seconds = 1e-12;  // after the first slice, one name a slice
    SegmentedWalk walk(dataset_at(dir / "src"), 2, limits);
    EntryList segment;
    BOOST_REQUIRE(walk.next(segment));  // no directories
    BOOST_TEST(segment.size() == 0u);
    BOOST_REQUIRE(walk.next(segment));  // the first slice: 4 names
    BOOST_TEST(segment.size() == 4u);
    usleep(200000);  // a walk running ahead would be through all 100 by now
    for (int f = 150; f < 200; ++f) {
        const std::string name = "f" + std::to_string(f);
        BOOST_REQUIRE(rename((dir / ("src/" + name)).c_str(), (dir / ("gone/" + name)).c_str()) == 0);
    }
    std::size_t taken = 4;
    const std::string error = test::error_of([&] {
        while (walk.next(segment))
            taken += segment.size();
    });
    // Listed at the start, stat'ed a slice at a time: a name gone since is
    // found missing (a walk ahead would have found them all), and the walk
    // stops there.
    BOOST_TEST(std::regex_search(error, std::regex("f1[5-9][0-9]")));
    BOOST_TEST(taken <= 50u);
}

BOOST_AUTO_TEST_CASE(written_segment_by_segment_the_tree_is_its_source)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "src/train").c_str(), 0755);
    make_classes(dir, "train/", 17, 4);
    chmod((dir / "src/train/n1003").c_str(), 0555);  // read-only: filled all the same
    chmod((dir / "src/train").c_str(), 0555);        // its units come after it
    dir.write("src/top.txt", "top");

    mkdir((dir / "dst").c_str(), 0700);
    WriterOptions options;
    options.dest_exists = true;
    std::vector<std::unique_ptr<Plan>> plans;
    std::unique_ptr<TreeWriter> top_writer;
    SegmentedWalk walk(dataset_at(dir / "src"), 2);
    for (EntryList entries; walk.next(entries);) {
        plans.push_back(std::make_unique<Plan>());
        Plan& plan = *plans.back();
        plan.source_root = dir / "src";
        plan.entries = std::move(entries);
        auto writer = std::make_unique<TreeWriter>(plan, dir / "dst", options);
        writer->create_skeleton();
        SourceReader reader(plan);
        std::vector<char> buffer(1024);
        for (const Chunk& chunk : layout_chunks(plan, 1024)) {
            reader.read(chunk, buffer.data());
            writer->write(chunk, buffer.data());
        }
        if (!top_writer)
            top_writer = std::move(writer);
        else
            writer->finish();
    }
    top_writer->finish();
    BOOST_TEST(content_of(dir / "dst/top.txt") == "top");
    BOOST_TEST(content_of(dir / "dst/train/n1003/img2.JPEG") == std::string(102, 'x'));
    struct stat st {};
    lstat((dir / "dst/train").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0555u);
    lstat((dir / "dst/train/n1003").c_str(), &st);
    BOOST_TEST((st.st_mode & 07777) == 0555u);
    struct stat src {};
    lstat((dir / "src/train").c_str(), &src);
    lstat((dir / "dst/train").c_str(), &st);
    BOOST_TEST(st.st_mtim.tv_sec == src.st_mtim.tv_sec);  // set after its units were written
    BOOST_TEST(st.st_mtim.tv_nsec == src.st_mtim.tv_nsec);
    for (const char* d : {"src/train/n1003", "src/train", "dst/train/n1003", "dst/train"})
        chmod((dir / d).c_str(), 0755);  // let TempDir clean up
}

BOOST_AUTO_TEST_CASE(what_the_walk_refuses_is_thrown_by_next_and_the_segments_before_it_come_first)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 20, 2);
    mkfifo((dir / "src/n1019/pipe").c_str(), 0644);
    SegmentedWalk walk(dataset_at(dir / "src"), 2);
    std::size_t got = 0;
    const std::string error = test::error_of([&] {
        for (EntryList segment; walk.next(segment);)
            ++got;
    });
    BOOST_TEST(got >= 1u);
    BOOST_TEST(error.find("n1019/pipe") != std::string::npos);
    BOOST_TEST(error.find("not a file, directory or symlink") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_walk_given_up_early_stops)
{
    test::TempDir dir;
    mkdir((dir / "src").c_str(), 0755);
    make_classes(dir, "", 30, 5);
    SegmentedWalk walk(dataset_at(dir / "src"), 2);
    EntryList first;
    BOOST_TEST(walk.next(first));
}  // the destructor joins the walk's thread

namespace {
void make_dir(const test::TempDir& dir, const std::string& rel)
{
    BOOST_REQUIRE(mkdir((dir / rel).c_str(), 0755) == 0);
}

// Every entry of src in exactly one segment, on 1, 4 or 32 threads, with
// slices and units as large as the walk allows or of one each.
void each_entry_once(const std::string& src)
{
    const std::multiset<std::string> want = paths_of(build_plan(dataset_at(src)));
    for (unsigned threads : {1u, 4u, 32u})
        for (double seconds : {0.5, 1e-12}) {
            SegmentLimits limits;
            limits.seconds = seconds;
            SegmentedWalk walk(dataset_at(src), threads, limits);
            std::vector<EntryList> segments;
            for (EntryList segment; walk.next(segment);)
                segments.push_back(std::move(segment));
            BOOST_TEST((paths_of(segments) == want), threads << " threads, " << seconds << " s");
        }
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_entry_comes_once_whatever_the_shape_of_the_tree)
{
    {  // a flat root: files, a symlink, an empty file, an empty directory
        test::TempDir dir;
        make_dir(dir, "src");
        for (int f = 0; f < 150; ++f)
            dir.write("src/f" + std::to_string(f), "x");
        dir.write("src/empty", "");
        BOOST_REQUIRE(symlink("f1", (dir / "src/link").c_str()) == 0);
        make_dir(dir, "src/emptydir");
        each_entry_once(dir / "src");
    }
    {  // a few directories of files, one empty, and a file at the root
        test::TempDir dir;
        make_dir(dir, "src");
        for (int d = 0; d < 3; ++d) {
            make_dir(dir, "src/d" + std::to_string(d));
            for (int f = 0; f < 3 + 10 * d; ++f)
                dir.write("src/d" + std::to_string(d) + "/f" + std::to_string(f), "x");
        }
        make_dir(dir, "src/empty");
        dir.write("src/top", "x");
        each_entry_once(dir / "src");
    }
    {  // deeper than the cut goes: two directories a level, files and a symlink in each
        test::TempDir dir;
        make_dir(dir, "src");
        std::vector<std::string> level{"src"};
        for (int depth = 0; depth < 7; ++depth) {
            std::vector<std::string> next;
            for (const std::string& d : level) {
                for (int f = 0; f < 3; ++f)
                    dir.write(d + "/f" + std::to_string(f), "x");
                BOOST_REQUIRE(symlink("f0", (dir / (d + "/l")).c_str()) == 0);
                for (int sub = 0; depth < 6 && sub < 2; ++sub) {
                    make_dir(dir, d + "/s" + std::to_string(sub));
                    next.push_back(d + "/s" + std::to_string(sub));
                }
            }
            level = std::move(next);
        }
        each_entry_once(dir / "src");
    }
    {  // cut below a/ (20 directories) with files at every level it went through
        test::TempDir dir;
        make_dir(dir, "src");
        dir.write("src/r", "x");
        make_dir(dir, "src/a");
        make_dir(dir, "src/b");
        for (int f = 0; f < 40; ++f)
            dir.write("src/a/f" + std::to_string(f), "x");
        for (int sub = 0; sub < 20; ++sub) {
            make_dir(dir, "src/a/s" + std::to_string(sub));
            dir.write("src/a/s" + std::to_string(sub) + "/x", "x");
            make_dir(dir, "src/a/s" + std::to_string(sub) + "/y");
        }
        make_dir(dir, "src/b/emptydir");
        dir.write("src/b/g", "x");
        each_entry_once(dir / "src");
    }
}

BOOST_AUTO_TEST_SUITE_END()
