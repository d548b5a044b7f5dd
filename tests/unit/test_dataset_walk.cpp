#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "tests/unit/deep_tree.hpp"
#include "tests/unit/error_of.hpp"
#include "tests/unit/in_child.hpp"
#include "tests/unit/tmpdir.hpp"

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
    symlink("a.txt", (dir / "link").c_str());
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
    symlink("../outside", (dir / "root/door").c_str());
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
    BOOST_TEST(message.find("'" + dir.path() + "/d/pipe' is a fifo, not a file, directory or symlink") == 0u,
               message);
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

BOOST_AUTO_TEST_SUITE_END()
