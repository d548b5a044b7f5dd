// tier/cache_entry: what a job brings, probed by a child acting as the
// job's user, and that child's ids.  Root only: becoming another user and
// mounting need it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <dirent.h>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "tests/unit/support/cache_fixtures.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tier/cache_entry.hpp"

using namespace dlstage;
using test::Cache;
using test::listing;
using test::seconds_since;

namespace {
// "REAL EFFECTIVE SAVED FS" uids of a child of this process that is not
// root's alone (the acting child), or "".
std::string acting_child_uids()
{
    DIR* proc = ::opendir("/proc");
    std::string found;
    while (const dirent* e = proc ? ::readdir(proc) : nullptr) {
        std::ifstream status(std::string("/proc/") + e->d_name + "/status");
        std::string line, ppid, uids;
        while (std::getline(status, line)) {
            if (line.rfind("PPid:", 0) == 0)
                ppid = line.substr(line.find_first_not_of(" \t", 5));
            if (line.rfind("Uid:", 0) == 0)
                uids = line.substr(line.find_first_not_of(" \t", 4));
        }
        std::replace(uids.begin(), uids.end(), '\t', ' ');
        if (ppid == std::to_string(::getpid()) && !uids.empty() && uids != "0 0 0 0")
            found = uids;
    }
    if (proc)
        ::closedir(proc);
    return found;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(cache_entry)

// What a job brings is what the source is, as its user can see it.
BOOST_AUTO_TEST_CASE(a_source_is_sized_as_the_jobs_user_sees_it)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::string file = c.tmp / "blob.bin";
    test::make_file(file, std::string(12345, 'b'));
    Dataset dataset;
    dataset.name = "blob";
    dataset.source = file;
    const ProbedSource seen = probe_source_as(dataset, c.state, "nobody", c.nobody->pw_uid, c.nobody->pw_gid, 10);
    BOOST_TEST(seen.problem == "");
    BOOST_TEST(seen.bytes.value_or(0) == 12345u);
    BOOST_REQUIRE(::chmod(file.c_str(), 0600) == 0);  // root's alone now
    const ProbedSource hidden = probe_source_as(dataset, c.state, "nobody", c.nobody->pw_uid, c.nobody->pw_gid, 10);
    BOOST_TEST(!hidden.bytes.has_value());
}

// The child acting for a user takes their effective ids only: with root's
// real and saved uid, the user may not signal it (a SIGSTOP would hold it,
// and the lock its parent holds, to its time limit).  Caught while it waits
// on a stopped FUSE server, its ids are read from /proc.
BOOST_AUTO_TEST_CASE(the_child_acting_for_a_user_keeps_roots_real_uid)
{
    if (test::cannot_mount())
        return;
    Cache c;
    test::make_dir(c.tmp / "content");
    test::make_file(c.tmp / "content/f");
    const std::string point = c.tmp / "mnt";
    test::make_dir(point);
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", point,
        [&] {
            ::alarm(30);
            std::string uids;
            std::thread look([&] {
                for (int i = 0; i < 50 && uids.empty(); ++i) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                    uids = acting_child_uids();
                }
            });
            Dataset dataset;
            dataset.name = "f";
            dataset.source = point + "/f";
            const ProbedSource probed =
                probe_source_as(dataset, c.state, "nobody", c.nobody->pw_uid, c.nobody->pw_gid, 3);
            look.join();
            return uids + "\n" + probed.problem;
        },
        true);
    if (test::skipped(text))
        return;
    const std::string nobody = std::to_string(c.nobody->pw_uid);
    BOOST_TEST(text == "0 " + nobody + " 0 " + nobody + "\ndid not finish within 3 s");
}

// The names an eviction removes without a listing are exactly those the
// one rule gives the entry: ".ready-x.toml" is x's, never "x.toml"'s.
BOOST_AUTO_TEST_CASE(derived_names_are_the_entrys_own_by_dataset_of)
{
    for (const std::string dataset : {"imagenet", "x.toml", ".ready-", "...tmp.x"})
        for (const std::string& name : cache_detail::derived_names(dataset))
            BOOST_TEST(cache_detail::dataset_of(name) == dataset, name);
    const auto names = cache_detail::derived_names("x.toml");
    BOOST_TEST((std::find(names.begin(), names.end(), ".ready-x.toml") == names.end()));
    BOOST_TEST((std::find(names.begin(), names.end(), ".ready-x.toml.toml") != names.end()));
    BOOST_TEST(cache_detail::derived_names("imagenet").size() == 12u);
}

// Never measured first, then measured longest ago: a dataset a user keeps
// slow to measure, first in name order, no longer keeps every later one from
// ever being measured.
BOOST_AUTO_TEST_CASE(the_measuring_order_takes_the_least_recently_measured_first)
{
    const auto order =
        cache_detail::measuring_order({"a-slow", "b", "c", "new"}, {{"a-slow", 300}, {"b", 100}, {"c", 100}});
    BOOST_TEST(order == (std::vector<std::string>{"new", "b", "c", "a-slow"}), boost::test_tools::per_element());
}

// Each owner measures in one share of the time: their directory and the
// asides made of it, so that a user minting asides costs only their own.
BOOST_AUTO_TEST_CASE(an_owners_asides_share_their_measuring_slot)
{
    const auto slots = cache_detail::measuring_slots({"alice", "bob"}, {"bob.untrusted-20261129T080000Z-7",
                                                                        "bob.untrusted-20261129T080000Z-8-1",
                                                                        "gone.untrusted-20261129T080000Z-9"});
    BOOST_REQUIRE(slots.size() == 3u);
    BOOST_TEST(slots[0].owner == "alice");
    BOOST_TEST(slots[0].has_directory);
    BOOST_TEST(slots[0].asides.empty());
    BOOST_TEST(slots[1].owner == "bob");
    BOOST_TEST(slots[1].has_directory);
    BOOST_TEST(slots[1].asides.size() == 2u);
    BOOST_TEST(slots[2].owner == "gone");  // an aside whose directory is gone
    BOOST_TEST(!slots[2].has_directory);
    BOOST_TEST(slots[2].asides.size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
