#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "lib/sys/tree_remover.hpp"
#include "tests/unit/support/deep_tree.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/removal_outcome.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

using dlstage::test::exists;
using dlstage::test::outcome;

BOOST_AUTO_TEST_SUITE(tree_remover)

BOOST_AUTO_TEST_CASE(a_tree_deeper_than_the_fd_limit_is_removed)
{
    test::TempDir tmp;
    const std::string top = tmp / "top";
    BOOST_REQUIRE(::mkdir(top.c_str(), 0755) == 0);
    const int levels = 500;
    test::make_deep_tree(top, levels, "d");
    // One fd per level would need five times what the limit allows.
    const std::string text = test::in_child([&] {
        const rlimit limit{kMaxOpenLevels + 36, kMaxOpenLevels + 36};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        const Fd parent(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        return outcome(remove_tree_at(parent.get(), "top", tmp.path()));
    });
    BOOST_TEST(text == "removed=" + std::to_string(levels + 2));  // the levels, the file, top itself
    BOOST_TEST(!exists(top));
}

BOOST_AUTO_TEST_CASE(a_symlink_to_outside_goes_as_a_link_and_its_target_stays)
{
    test::TempDir tmp;
    const std::string outside = tmp / "outside";
    BOOST_REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    std::ofstream(outside + "/keep") << "mine";
    const std::string top = tmp / "top";
    BOOST_REQUIRE(::mkdir(top.c_str(), 0755) == 0);
    BOOST_REQUIRE(::mkdir((top + "/sub").c_str(), 0755) == 0);
    BOOST_REQUIRE(::symlink(outside.c_str(), (top + "/sub/to-dir").c_str()) == 0);
    BOOST_REQUIRE(::symlink((outside + "/keep").c_str(), (top + "/to-file").c_str()) == 0);
    BOOST_TEST(outcome(remove_tree(top + "/")) == "removed=4");  // two links, sub, top
    BOOST_TEST(!exists(top));
    BOOST_TEST(exists(outside + "/keep"));
}

BOOST_AUTO_TEST_CASE(a_symlink_at_the_top_is_not_followed)
{
    test::TempDir tmp;
    const std::string outside = tmp / "outside";
    BOOST_REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    std::ofstream(outside + "/keep") << "mine";
    BOOST_REQUIRE(::symlink(outside.c_str(), (tmp / "link").c_str()) == 0);
    BOOST_TEST(outcome(remove_tree(tmp / "link")) ==
               "removed=0\n" + tmp.path() + "/link is a symlink; nothing removed");
    BOOST_TEST(exists(outside + "/keep"));
}

BOOST_AUTO_TEST_CASE(nothing_there_is_success)
{
    test::TempDir tmp;
    BOOST_TEST(outcome(remove_tree(tmp / "absent")) == "removed=0");
}

BOOST_AUTO_TEST_SUITE_END()
