#include <boost/test/unit_test.hpp>

#include <atomic>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "tests/unit/support/deep_tree.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
std::vector<std::string> paths_of(const std::vector<WalkedEntry>& entries)
{
    std::vector<std::string> paths;
    for (const WalkedEntry& e : entries)
        paths.push_back(e.path);
    return paths;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(dataset_walk)

BOOST_AUTO_TEST_CASE(tree_deeper_than_the_fd_limit_is_walked)
{
    test::TempDir dir;
    const int levels = 300;
    test::make_deep_tree(dir.path(), levels, "d");
    const std::string text = test::in_child([&] {
        const rlimit limit{32, 32};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        return "entries=" + std::to_string(walk_dataset(dir.path(), 4).size());
    });
    BOOST_TEST(text == "entries=" + std::to_string(levels + 1));
}

BOOST_AUTO_TEST_CASE(every_entry_in_bytewise_path_order_whatever_the_threads)
{
    test::TempDir dir;
    mkdir((dir / "a").c_str(), 0755);
    mkdir((dir / "a/b").c_str(), 0700);
    mkdir((dir / "empty").c_str(), 0755);
    dir.write("a.txt", "12345");
    dir.write("a/b/x", "");
    BOOST_REQUIRE(symlink("a.txt", (dir / "link").c_str()) == 0);
    // '.' sorts before '/': "a.txt" comes between "a" and "a/b".
    const std::vector<std::string> expected{"a", "a.txt", "a/b", "a/b/x", "empty", "link"};
    for (unsigned threads : {1u, 4u}) {
        const auto entries = walk_dataset(dir.path(), threads);
        BOOST_TEST(paths_of(entries) == expected, boost::test_tools::per_element());
        BOOST_TEST(S_ISDIR(entries[0].st.st_mode));
        BOOST_TEST(entries[1].st.st_size == 5);
        BOOST_TEST((entries[2].st.st_mode & 07777) == 0700u);
        BOOST_TEST(S_ISLNK(entries[5].st.st_mode));
        BOOST_TEST(entries[5].link_target == "a.txt");
    }
}

BOOST_AUTO_TEST_CASE(a_symlink_to_a_directory_is_an_entry_not_followed)
{
    test::TempDir dir;
    mkdir((dir / "outside").c_str(), 0755);
    dir.write("outside/secret", "s");
    mkdir((dir / "root").c_str(), 0755);
    BOOST_REQUIRE(symlink("../outside", (dir / "root/door").c_str()) == 0);
    const auto entries = walk_dataset(dir / "root");
    BOOST_TEST(paths_of(entries) == std::vector<std::string>{"door"}, boost::test_tools::per_element());
    BOOST_TEST(entries[0].link_target == "../outside");
}

BOOST_AUTO_TEST_CASE(special_files_are_refused_by_name_and_kind)
{
    test::TempDir dir;
    mkdir((dir / "d").c_str(), 0755);
    mkfifo((dir / "d/pipe").c_str(), 0644);
    const std::string message = test::error_of([&] { walk_dataset(dir.path()); });
    BOOST_TEST(message.find("'" + dir.path() + "/d/pipe' is a fifo, not a file, directory or symlink") == 0u, message);
}

BOOST_AUTO_TEST_CASE(what_cannot_be_read_is_an_error_now)
{
    test::TempDir dir;
    BOOST_TEST(test::error_of([&] { walk_dataset(dir / "missing"); }) ==
               "cannot read " + dir.path() + "/missing: No such file or directory");
    if (geteuid() == 0)
        return;  // root reads everything
    dir.write("locked", "x");
    chmod((dir / "locked").c_str(), 0);
    BOOST_TEST(test::error_of([&] { walk_dataset(dir.path()); }) ==
               "cannot read " + dir.path() + "/locked: Permission denied");
    unlink((dir / "locked").c_str());
    mkdir((dir / "closed").c_str(), 0);
    BOOST_TEST(test::error_of([&] { walk_dataset(dir.path()); }) ==
               "cannot read " + dir.path() + "/closed: Permission denied");
    chmod((dir / "closed").c_str(), 0755);
}

namespace {
// A flat directory of `files` files, and `dirs` directories of `files`
// files each: what makes the stats of one directory run in parallel.
void make_wide_tree(const test::TempDir& dir, int dirs, int files)
{
    for (int f = 0; f < files; ++f)
        dir.write("img" + std::to_string(f) + ".jpg", std::string(static_cast<std::size_t>(f % 7), 'x'));
    for (int d = 0; d < dirs; ++d) {
        const std::string sub = "class" + std::to_string(d);
        mkdir((dir / sub).c_str(), 0755);
        for (int f = 0; f < files; ++f)
            dir.write(sub + "/" + std::to_string(f) + ".jpg", "");
    }
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_wide_tree_gives_the_same_list_on_any_number_of_threads)
{
    test::TempDir dir;
    make_wide_tree(dir, 12, 150);
    const auto one = walk_dataset(dir.path(), 1);
    BOOST_TEST(one.size() == 12u + 13u * 150u);
    for (unsigned threads : {2u, 16u, 64u}) {
        for (int run = 0; run < 3; ++run) {
            const auto many = walk_dataset(dir.path(), threads);
            BOOST_TEST((paths_of(many) == paths_of(one)), "threads=" << threads);
            for (std::size_t i = 0; i < one.size() && i < many.size(); ++i)
                BOOST_TEST((many[i].st.st_ino == one[i].st.st_ino && many[i].st.st_size == one[i].st.st_size));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_directory_comes_before_its_entries_are_visited)
{
    test::TempDir dir;
    make_wide_tree(dir, 6, 40);
    const Fd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::mutex mutex;
    std::set<std::string> seen;
    bool in_order = true;
    walk_tree(root.get(), dir.path(), 8, [&](const FoundEntry& e) {
        const std::lock_guard<std::mutex> lock(mutex);
        const std::string parent(parent_in_tree(e.path));
        in_order = in_order && (parent.empty() || seen.count(parent) == 1);
        seen.insert(e.path);
    });
    BOOST_TEST(in_order);
    BOOST_TEST(seen.size() == 6u + 7u * 40u);
}

BOOST_AUTO_TEST_CASE(wide_directories_stay_within_the_descriptor_bound)
{
    // Two descriptors per thread (a directory and its stream), whatever the
    // width: 3 standard ones, the test's pipe, the root, and 2 x 8, plus 2
    // spare for the runtime (ASan opened one once); an unbounded walk of 40
    // directories still runs out.
    test::TempDir dir;
    make_wide_tree(dir, 40, 50);
    const std::string text = test::in_child([&] {
        const rlimit limit{3 + 2 + 2 * 8 + 2, 3 + 2 + 2 * 8 + 2};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        return "entries=" + std::to_string(walk_dataset(dir.path(), 8).size());
    });
    BOOST_TEST(text == "entries=" + std::to_string(40 + 41 * 50));
}

BOOST_AUTO_TEST_CASE(the_first_failure_names_its_entry_and_stops_the_walk)
{
    test::TempDir dir;
    make_wide_tree(dir, 4, 200);
    mkfifo((dir / "class2/pipe").c_str(), 0644);
    for (unsigned threads : {1u, 16u})
        BOOST_TEST(test::error_of([&] { walk_dataset(dir.path(), threads); }) ==
                   "'" + dir.path() +
                       "/class2/pipe' is a fifo, not a file, directory or symlink; "
                       "datasets cannot hold devices, fifos or sockets");
}

BOOST_AUTO_TEST_CASE(every_entry_found_is_counted_for_progress)
{
    test::TempDir dir;
    make_wide_tree(dir, 3, 30);
    const std::uint64_t before = entries_walked();
    walk_dataset(dir.path(), 4);
    BOOST_TEST(entries_walked() - before == 3u + 4u * 30u);
}

BOOST_AUTO_TEST_CASE(slow_stats_get_every_thread_fast_ones_as_many_as_the_cpus)
{
    BOOST_TEST(walk_threads_for(true, 16, 2) == 16u);  // a parallel file system's round trips
    BOOST_TEST(walk_threads_for(false, 16, 2) == 2u);  // the page cache
    BOOST_TEST(walk_threads_for(false, 16, 8) == 8u);
    BOOST_TEST(walk_threads_for(false, 16, 1) == 2u);  // two at least
    BOOST_TEST(walk_threads_for(false, 4, 64) == 4u);  // never more than asked
    BOOST_TEST(walk_threads_for(false, 1, 64) == 1u);
}

BOOST_AUTO_TEST_CASE(a_batch_of_stats_is_slow_by_its_median_with_hysteresis)
{
    std::vector<float> round_trips(16, 1000.0f);
    BOOST_TEST(slow_by_median(false, round_trips.data(), round_trips.size(), kSlowStatUs));
    std::vector<float> just_over(16, static_cast<float>(kSlowStatUs + 1));
    BOOST_TEST(slow_by_median(false, just_over.data(), just_over.size(), kSlowStatUs));
    std::vector<float> cached(16, 3.0f);
    BOOST_TEST(!slow_by_median(true, cached.data(), cached.size(), kSlowStatUs));
    // In between: as it was, either way.
    std::vector<float> near(16, static_cast<float>(kSlowStatUs * 0.75));
    BOOST_TEST(slow_by_median(true, near.data(), near.size(), kSlowStatUs));
    BOOST_TEST(!slow_by_median(false, near.data(), near.size(), kSlowStatUs));
}

BOOST_AUTO_TEST_CASE(a_tree_in_the_page_cache_is_walked_on_as_many_threads_as_cpus)
{
    // Wide enough that a walk left on all its threads would have more of
    // them at work than the CPUs.
    test::TempDir dir;
    make_wide_tree(dir, 64, 64);
    walk_dataset(dir.path(), 1);  // every stat answered from memory from now on
    const unsigned cpus = usable_cpus();
    if (cpus >= 16)
        return;  // a machine this wide keeps all 16
    const Fd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::mutex mutex;
    std::set<std::thread::id> late;  // threads that visited once the first directories were done
    std::size_t visits = 0;
    walk_tree(root.get(), dir.path(), 16, [&](const FoundEntry&) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (++visits > 64u * 16u)
            late.insert(std::this_thread::get_id());
    });
    BOOST_TEST(visits == 64u + 65u * 64u);
    BOOST_TEST(late.size() <= std::max(2u, cpus));
}

// walk_names_of(dir, names): what walk_names finds of `names` listed in
// dir (below the root), with `threads`, as sorted paths.
std::set<std::string> walk_names_of(const test::TempDir& root, const NamesIn& names, unsigned threads)
{
    const Fd fd(::open(root.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::mutex mutex;
    std::set<std::string> found;
    walk_names(fd.get(), root.path(), {names}, threads, [&](const FoundEntry& e) {
        const std::lock_guard<std::mutex> lock(mutex);
        found.insert(e.path);
    });
    return found;
}

BOOST_AUTO_TEST_CASE(names_listed_earlier_are_stated_and_one_now_a_directory_walked_below)
{
    test::TempDir dir;
    make_wide_tree(dir, 2, 3);  // class0/, class1/, each with 0.jpg..2.jpg
    struct stat st {};
    BOOST_REQUIRE(stat((dir / "class1").c_str(), &st) == 0);
    const NamesIn names{"class1", st.st_dev, st.st_ino, {"0.jpg", "2.jpg"}};
    for (unsigned threads : {1u, 16u})
        BOOST_TEST((walk_names_of(dir, names, threads) == std::set<std::string>{"class1/0.jpg", "class1/2.jpg"}));
    // A name listed as a file, a directory by the time it is stat'ed: what
    // it holds is walked too.
    BOOST_REQUIRE(unlink((dir / "class1/2.jpg").c_str()) == 0);
    BOOST_REQUIRE(mkdir((dir / "class1/2.jpg").c_str(), 0755) == 0);
    dir.write("class1/2.jpg/inner", "i");
    BOOST_TEST(
        (walk_names_of(dir, names, 4) == std::set<std::string>{"class1/0.jpg", "class1/2.jpg", "class1/2.jpg/inner"}));
}

BOOST_AUTO_TEST_CASE(names_of_a_directory_replaced_since_its_listing_are_refused)
{
    test::TempDir dir;
    make_wide_tree(dir, 2, 3);
    struct stat st {};
    BOOST_REQUIRE(stat((dir / "class1").c_str(), &st) == 0);
    const NamesIn names{"class1", st.st_dev, st.st_ino, {"0.jpg"}};
    BOOST_REQUIRE(rename((dir / "class1").c_str(), (dir / "old").c_str()) == 0);
    BOOST_REQUIRE(rename((dir / "class0").c_str(), (dir / "class1").c_str()) == 0);
    BOOST_TEST(test::error_of([&] { walk_names_of(dir, names, 2); }) ==
               "'" + dir.path() + "/class1' changed while being read");
}

BOOST_AUTO_TEST_CASE(names_of_many_directories_stay_within_the_descriptor_bound)
{
    // As a walk of the directories would (wide_directories_stay_within_
    // the_descriptor_bound): each directory of the names is opened by the
    // thread that stats them, not all of them up front.
    test::TempDir dir;
    make_wide_tree(dir, 40, 2);
    std::vector<NamesIn> names;
    for (int c = 0; c < 40; ++c) {
        struct stat st {};
        const std::string d = "class" + std::to_string(c);
        BOOST_REQUIRE(stat((dir / d).c_str(), &st) == 0);
        names.push_back(NamesIn{d, st.st_dev, st.st_ino, {"0.jpg", "1.jpg"}});
    }
    const std::string text = test::in_child([&] {
        const rlimit limit{3 + 2 + 2 * 8 + 2, 3 + 2 + 2 * 8 + 2};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        const Fd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        std::atomic<int> found{0};
        try {
            walk_names(fd.get(), dir.path(), names, 8, [&](const FoundEntry&) { ++found; });
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return "entries=" + std::to_string(found.load());
    });
    BOOST_TEST(text == "entries=80");
}

BOOST_AUTO_TEST_SUITE_END()
