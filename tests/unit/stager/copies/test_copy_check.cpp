#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "stager/copies/copy_check.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;
using dlstage::test::dataset_at;
using dlstage::test::error_of;
using dlstage::test::TempDir;

namespace {
// The contents file as the stager reads it: its bytes, then the plan.
std::optional<Plan> read_contents(const std::string& path)
{
    const std::optional<std::string> bytes = read_contents_file(path);
    if (!bytes)
        return std::nullopt;
    return deserialize(*bytes);
}

// src/ with a dir, three files and a symlink; copy/ an identical tree.
struct Trees {
    TempDir dir;
    Trees()
    {
        for (const char* root : {"src", "copy"}) {
            mkdir((dir / root).c_str(), 0755);
            mkdir((dir / root + "/d").c_str(), 0755);
            dir.write(std::string(root) + "/a.bin", "aaaa");
            dir.write(std::string(root) + "/d/b.bin", "bbbbbbbb");
            dir.write(std::string(root) + "/d/c.bin", "");
            BOOST_REQUIRE(symlink("a.bin", (dir / root + "/l").c_str()) == 0);
        }
    }
    Plan plan() const { return build_plan(dataset_at(dir / "src")); }
    Fd copy_fd() const { return Fd(::open((dir / "copy").c_str(), O_RDONLY | O_DIRECTORY)); }
};

std::size_t index_of(const Plan& plan, const std::string& path)
{
    for (std::size_t i = 0; i < plan.entries.size(); ++i)
        if (plan.entries[i].path == path)
            return i;
    BOOST_FAIL("no entry " + path);
    return 0;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(copy_check)

BOOST_AUTO_TEST_CASE(two_plans_compared_say_what_changed_what_is_new_and_what_changed_kind)
{
    Trees t;
    const Plan then = t.plan();
    const struct timespec old[2] = {{1000, 0}, {1000, 0}};
    utimensat(AT_FDCWD, (t.dir / "src/d/b.bin").c_str(), old, 0);  // changed
    t.dir.write("src/new.bin", "n");                               // new
    ::unlink((t.dir / "src/l").c_str());
    mkdir((t.dir / "src/l").c_str(), 0755);  // another kind
    const Plan now = t.plan();
    const PlanChanges changes = changes_between(then, now);
    BOOST_TEST(changes.kind_changes == 1u);
    for (std::size_t i = 0; i < now.entries.size(); ++i) {
        const std::string path(now.entries.path(i));
        BOOST_TEST(bool(changes.changed[i]) == (path == "d/b.bin"), path);
        BOOST_TEST(bool(changes.known[i]) == (path != "new.bin"), path);
    }
}

BOOST_AUTO_TEST_CASE(a_complete_copy_has_nothing_bad_and_the_shares_cover_every_entry_once)
{
    Trees t;
    const Plan plan = t.plan();
    const Fd copy = t.copy_fd();
    std::uint64_t checked = 0;
    for (int rank = 0; rank < 3; ++rank) {
        CheckShare share;
        share.rank = rank;
        share.ranks = 3;
        const CopyCheck c = check_copy(copy.get(), plan, share);
        BOOST_TEST(c.bad.empty());
        checked += c.checked;
    }
    BOOST_TEST(checked == plan.entries.size());
}

BOOST_AUTO_TEST_CASE(missing_truncated_and_retyped_entries_are_found)
{
    Trees t;
    const Plan plan = t.plan();
    unlink((t.dir / "copy/d/c.bin").c_str());
    BOOST_REQUIRE(truncate((t.dir / "copy/d/b.bin").c_str(), 2) == 0);
    unlink((t.dir / "copy/l").c_str());
    mkdir((t.dir / "copy/l").c_str(), 0755);  // a directory where a symlink was
    const Fd copy = t.copy_fd();
    const CopyCheck c = check_copy(copy.get(), plan, CheckShare{});
    BOOST_TEST(c.missing == 2u);
    BOOST_TEST(c.wrong_size == 1u);
    const std::set<std::size_t> bad(c.bad.begin(), c.bad.end());
    BOOST_TEST(bad ==
               (std::set<std::size_t>{index_of(plan, "d/c.bin"), index_of(plan, "d/b.bin"), index_of(plan, "l")}));
}

BOOST_AUTO_TEST_CASE(the_oldest_file_counts_by_the_sites_clock_and_a_refresh_moves_atimes)
{
    Trees t;
    const Plan plan = t.plan();
    const struct timespec times[2] = {{5000, 0}, {7000, 0}};  // atime, mtime
    utimensat(AT_FDCWD, (t.dir / "copy/a.bin").c_str(), times, 0);
    const Fd copy = t.copy_fd();
    CheckShare share;
    BOOST_TEST(check_copy(copy.get(), plan, share).oldest == 5000);
    share.purge_by = PurgeBy::Mtime;
    BOOST_TEST(check_copy(copy.get(), plan, share).oldest == 7000);
    share.purge_by = PurgeBy::Atime;
    share.refresh_atime = true;
    check_copy(copy.get(), plan, share);
    struct stat st {};
    stat((t.dir / "copy/a.bin").c_str(), &st);
    BOOST_TEST(st.st_atim.tv_sec > 5000);
    BOOST_TEST(st.st_mtim.tv_sec == 7000);  // only the access time moves
}

BOOST_AUTO_TEST_CASE(a_file_is_fetched_again_whole_and_a_changed_source_is_refused)
{
    Trees t;
    const Plan plan = t.plan();
    BOOST_REQUIRE(truncate((t.dir / "copy/d/b.bin").c_str(), 1) == 0);
    const Fd copy = t.copy_fd();
    fetch_again(plan, index_of(plan, "d/b.bin"), copy.get(), t.dir / "copy", true);
    struct stat st {};
    stat((t.dir / "copy/d/b.bin").c_str(), &st);
    BOOST_TEST(st.st_size == 8);
    BOOST_TEST(st.st_mtim.tv_sec == plan.entries[index_of(plan, "d/b.bin")].mtime_sec);
    t.dir.write("src/d/b.bin", "changed!!");
    BOOST_TEST(error_of([&] {
                   fetch_again(plan, index_of(plan, "d/b.bin"), copy.get(), t.dir / "copy", true);
               }).find("changed") != std::string::npos);
    BOOST_TEST(access((t.dir / "copy/d/b.bin.dlstage-fetch").c_str(), F_OK) != 0);
}

BOOST_AUTO_TEST_CASE(the_contents_file_round_trips_and_a_fifo_is_refused_without_blocking)
{
    Trees t;
    const Plan plan = t.plan();
    BOOST_TEST(!read_contents(t.dir / "none").has_value());
    const Fd dir_fd(::open(t.dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    write_contents(dir_fd.get(), t.dir.path(), "contents", plan);
    const auto back = read_contents(t.dir / "contents");
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(source_identity(*back) == source_identity(plan));
    mkfifo((t.dir / "fifo").c_str(), 0600);
    BOOST_TEST(error_of([&] { read_contents(t.dir / "fifo"); }).find("not a regular file") != std::string::npos);
    t.dir.write("junk", "not a plan");
    BOOST_TEST(!error_of([&] { read_contents(t.dir / "junk"); }).empty());
}

// A directory its owner opened to others (chmod 0777): another user swaps
// a file for one of the same size and the same name.  Only the owner's own
// entries count as the copy, and only their own contents file as its list.
BOOST_AUTO_TEST_CASE(an_entry_or_a_contents_file_someone_else_owns_is_not_the_copys)
{
    if (geteuid() != 0)
        return;  // chown needs root
    Trees t;
    const Plan plan = t.plan();
    BOOST_REQUIRE(lchown((t.dir / "copy/d/b.bin").c_str(), 12345, 12345) == 0);
    const Fd copy = t.copy_fd();
    const CopyCheck c = check_copy(copy.get(), plan, CheckShare{});
    BOOST_TEST(c.foreign == 1u);
    BOOST_TEST(c.missing == 1u);
    BOOST_TEST(c.bad == std::vector<std::size_t>{index_of(plan, "d/b.bin")});
    const Fd dir_fd(::open(t.dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    write_contents(dir_fd.get(), t.dir.path(), "contents", plan);
    BOOST_REQUIRE(lchown((t.dir / "contents").c_str(), 12345, 12345) == 0);
    BOOST_TEST(error_of([&] { read_contents(t.dir / "contents"); }).find("belongs to uid 12345") != std::string::npos);
    // A huge one (sparse) is refused for its owner before anything is loaded.
    BOOST_REQUIRE(truncate((t.dir / "contents").c_str(), off_t(3) << 30) == 0);
    BOOST_TEST(error_of([&] { read_contents(t.dir / "contents"); }).find("belongs to uid 12345") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
