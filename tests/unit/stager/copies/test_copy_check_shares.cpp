// The check of a shared copy by stat (stager/copies/copy_check): every entry of
// the contents is checked once over all ranks' shares, in blocks over
// threads, and what is missing or truncated is reported by index.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "lib/sys/fd.hpp"
#include "stager/copies/copy_check.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

BOOST_AUTO_TEST_SUITE(copy_check_shares)

namespace {
// A copy of `files` files of i % 7 bytes in 3 directories, and its plan.
Plan make_copy(const test::TempDir& dir, std::size_t files)
{
    Plan plan;
    plan.source_root = dir.path();
    plan.format = Format::Dir;
    for (int d = 0; d < 3; ++d) {
        Entry e;
        e.type = EntryType::Dir;
        e.path = "d" + std::to_string(d);
        e.mode = 0755;
        ::mkdir((dir / e.path).c_str(), 0755);
        plan.entries.add(e);
    }
    for (std::size_t i = 0; i < files; ++i) {
        Entry e;
        e.path = "d" + std::to_string(i % 3) + "/f" + std::to_string(i);
        e.mode = 0644;
        e.size = i % 7;
        dir.write(e.path, std::string(e.size, 'x'));
        plan.entries.add(e);
    }
    return plan;
}

CheckShare share_of(int rank, int ranks, unsigned threads)
{
    CheckShare share;
    share.rank = rank;
    share.ranks = ranks;
    share.threads = threads;
    return share;
}

Fd open_dir(const std::string& path)
{
    return Fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_whole_copy_checks_clean_and_the_shares_cover_every_entry_once)
{
    test::TempDir dir;
    const Plan plan = make_copy(dir, 3000);  // several blocks per share
    const Fd copy = open_dir(dir.path());
    std::uint64_t checked = 0;
    for (int rank = 0; rank < 3; ++rank) {
        const CopyCheck c = check_copy(copy.get(), plan, share_of(rank, 3, 4));
        BOOST_TEST(c.missing == 0u);
        BOOST_TEST(c.wrong_size == 0u);
        BOOST_TEST(c.bad.empty());
        BOOST_TEST(c.oldest != std::numeric_limits<std::int64_t>::max());
        checked += c.checked;
    }
    BOOST_TEST(checked == plan.entries.size());
}

BOOST_AUTO_TEST_CASE(missing_truncated_and_retyped_entries_are_found_by_index_in_order)
{
    test::TempDir dir;
    const Plan plan = make_copy(dir, 2000);
    // Entry indexes: 3 directories first, then file i at 3 + i.
    ::unlink((dir / plan.entries[3 + 10].path).c_str());
    ::unlink((dir / plan.entries[3 + 1500].path).c_str());
    BOOST_REQUIRE(::truncate((dir / plan.entries[3 + 13].path).c_str(), 0) == 0);  // 13 % 7 = 6 bytes before
    ::unlink((dir / plan.entries[3 + 700].path).c_str());
    ::mkdir((dir / plan.entries[3 + 700].path).c_str(), 0755);  // a directory where a file was
    const Fd copy = open_dir(dir.path());
    std::set<std::size_t> bad;
    std::uint64_t missing = 0, wrong = 0;
    for (int rank = 0; rank < 2; ++rank) {
        const CopyCheck c = check_copy(copy.get(), plan, share_of(rank, 2, 3));
        BOOST_TEST(std::is_sorted(c.bad.begin(), c.bad.end()));
        for (const std::size_t i : c.bad) {
            BOOST_TEST(i % 2 == static_cast<std::size_t>(rank));  // this rank's share only
            bad.insert(i);
        }
        missing += c.missing;
        wrong += c.wrong_size;
    }
    BOOST_TEST(missing == 3u);
    BOOST_TEST(wrong == 1u);
    BOOST_TEST((bad == std::set<std::size_t>{3 + 10, 3 + 13, 3 + 700, 3 + 1500}));
}

BOOST_AUTO_TEST_CASE(more_ranks_than_entries_and_an_empty_plan)
{
    test::TempDir dir;
    const Plan plan = make_copy(dir, 2);  // 5 entries
    const Fd copy = open_dir(dir.path());
    BOOST_TEST(check_copy(copy.get(), plan, share_of(7, 8, 16)).checked == 0u);
    BOOST_TEST(check_copy(copy.get(), plan, share_of(4, 8, 16)).checked == 1u);
    BOOST_TEST(check_copy(copy.get(), Plan{}, CheckShare{}).checked == 0u);
}

BOOST_AUTO_TEST_CASE(what_a_job_added_is_found_once_over_the_shares_an_added_directory_as_one)
{
    test::TempDir dir;
    const Plan plan = make_copy(dir, 300);
    const auto added_over = [&](int ranks) {
        const Fd copy = open_dir(dir.path());
        std::vector<std::string> all;
        for (int rank = 0; rank < ranks; ++rank) {
            const std::vector<std::string> mine = find_added(copy.get(), plan, rank, ranks, 2);
            BOOST_TEST(std::is_sorted(mine.begin(), mine.end()));
            all.insert(all.end(), mine.begin(), mine.end());
        }
        std::sort(all.begin(), all.end());
        return all;
    };
    BOOST_TEST(added_over(3).empty());
    dir.write("d1/new.txt", "mine");
    ::mkdir((dir / "d2/newdir").c_str(), 0755);
    dir.write("d2/newdir/x", "x");
    dir.write("top.bin", "");
    ::unlink((dir / plan.entries[3 + 7].path).c_str());  // missing is check_copy's to say
    for (const int ranks : {1, 2, 5})
        BOOST_TEST((added_over(ranks) == std::vector<std::string>{"d1/new.txt", "d2/newdir", "top.bin"}));
}

BOOST_AUTO_TEST_CASE(a_file_written_in_place_is_changed_when_mtimes_are_compared)
{
    test::TempDir dir;
    Plan plan;
    plan.source_root = dir.path();
    Entry e;
    e.path = "f";
    e.size = 4;
    dir.write("f", "abcd");
    struct stat st {};
    BOOST_REQUIRE(::stat((dir / "f").c_str(), &st) == 0);
    e.mtime_sec = st.st_mtim.tv_sec;
    plan.entries.add(e);
    const Fd copy = open_dir(dir.path());
    CheckShare share;
    share.compare_mtime = true;
    BOOST_TEST(check_copy(copy.get(), plan, share).bad.empty());
    const struct timespec later[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec + 100, 0}};
    BOOST_REQUIRE(::utimensat(AT_FDCWD, (dir / "f").c_str(), later, 0) == 0);  // same size, written since
    const CopyCheck c = check_copy(copy.get(), plan, share);
    BOOST_TEST(c.changed == 1u);
    BOOST_TEST(c.wrong_size == 1u);
    share.compare_mtime = false;  // a tier purged by mtime: the copy's mtimes are its own
    BOOST_TEST(check_copy(copy.get(), plan, share).bad.empty());
}

BOOST_AUTO_TEST_SUITE_END()
