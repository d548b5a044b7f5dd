// The check of the source against a plan before a kept copy is reused on a
// manifest's word (stager/plan/source_check): files and symlinks, each once over
// all shares, by the stager's rule (size, mtime, type, target).
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stager/plan/plan.hpp"
#include "stager/plan/source_check.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

BOOST_AUTO_TEST_SUITE(source_check)

namespace {
// A source of `files` files in 4 directories and a symlink, and its plan
// (a walk: the times are the files').
Plan make_source(const test::TempDir& dir, int files)
{
    for (int d = 0; d < 4; ++d)
        ::mkdir((dir / ("d" + std::to_string(d))).c_str(), 0755);
    for (int i = 0; i < files; ++i)
        dir.write("d" + std::to_string(i % 4) + "/f" + std::to_string(i),
                  std::string(static_cast<std::size_t>(i % 5), 'x'));
    BOOST_REQUIRE(::symlink("d0/f0", (dir / "link").c_str()) == 0);
    return build_plan(test::dataset_at(dir.path()));
}

Entry entry_of(std::uint64_t size, std::int64_t sec, std::uint32_t nsec)
{
    Entry e;
    e.size = size;
    e.mtime_sec = sec;
    e.mtime_nsec = nsec;
    return e;
}
SourceDrift over_shares(const Plan& plan, int ranks)
{
    SourceDrift all;
    for (int rank = 0; rank < ranks; ++rank) {
        const SourceDrift d = check_source(plan, rank, ranks, 3);
        all.checked += d.checked;
        all.changed += d.changed;
        if (all.example.empty())
            all.example = d.example;
    }
    return all;
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_unchanged_source_holds_and_every_file_is_checked_once)
{
    test::TempDir dir;
    const Plan plan = make_source(dir, 1500);  // several blocks per share
    const SourceDrift d = over_shares(plan, 3);
    BOOST_TEST(d.changed == 0u);
    BOOST_TEST(d.example.empty());
    BOOST_TEST(d.checked == 1501u);  // the files and the symlink, not the directories
}

BOOST_AUTO_TEST_CASE(a_file_rewritten_in_place_is_named_with_how_it_changed)
{
    test::TempDir dir;
    const Plan plan = make_source(dir, 40);
    dir.write("d1/f13", "longer than before");  // no directory changes
    const SourceDrift d = over_shares(plan, 2);
    BOOST_TEST(d.changed == 1u);
    BOOST_TEST(d.example == dir.path() + "/d1/f13: size 3 -> 18", d.example);
}

BOOST_AUTO_TEST_CASE(the_same_size_with_a_new_mtime_is_a_change_too)
{
    test::TempDir dir;
    const Plan plan = make_source(dir, 8);
    const struct timespec later[2] = {{0, UTIME_OMIT}, {::time(nullptr) + 100, 0}};
    BOOST_REQUIRE(::utimensat(AT_FDCWD, (dir / "d2/f6").c_str(), later, 0) == 0);
    const SourceDrift d = over_shares(plan, 1);
    BOOST_TEST(d.changed == 1u);
    BOOST_TEST(d.example.find("/d2/f6: mtime ") != std::string::npos, d.example);
}

BOOST_AUTO_TEST_CASE(gone_retyped_and_retargeted_entries_are_counted)
{
    test::TempDir dir;
    const Plan plan = make_source(dir, 12);
    ::unlink((dir / "d3/f3").c_str());
    ::unlink((dir / "d0/f4").c_str());
    ::mkdir((dir / "d0/f4").c_str(), 0755);
    ::unlink((dir / "link").c_str());
    BOOST_REQUIRE(::symlink("d1/f1", (dir / "link").c_str()) == 0);
    const SourceDrift d = over_shares(plan, 4);
    BOOST_TEST(d.changed == 3u);
    BOOST_TEST(check_source(plan, 0, 1).example.find(": ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_source_root_that_is_gone_is_one_change_saying_why)
{
    test::TempDir dir;
    Plan plan = make_source(dir, 2);
    plan.source_root = dir / "nowhere";
    const SourceDrift d = check_source(plan, 0, 1);
    BOOST_TEST(d.changed == 1u);
    BOOST_TEST(d.example.find("nowhere: No such file or directory") != std::string::npos, d.example);
}

BOOST_AUTO_TEST_CASE(the_rule_names_size_before_mtime_and_passes_a_match)
{
    struct stat st {};
    st.st_size = 100;
    st.st_mtim = {1600000000, 42};
    BOOST_TEST(changed_since_planned("/p/d/x", entry_of(100, 1600000000, 42), st) == "");
    BOOST_TEST(changed_since_planned("/p/d/x", entry_of(120, 1, 0), st) ==
               "/p/d/x changed since it was planned (size 120 -> 100): run again");
    BOOST_TEST(changed_since_planned("/p/d/x", entry_of(100, 1600000000, 0), st) ==
               "/p/d/x changed since it was planned (mtime 2020-09-13 12:26:40.000000000 UTC -> "
               "2020-09-13 12:26:40.000000042 UTC): run again");
}

BOOST_AUTO_TEST_SUITE_END()
