// tier/cache_entries: a node cache's entries as root measures and evicts them,
// in a temporary tier whose user directory belongs to "nobody" (the
// measuring child becomes that user, as the prolog's does).  Root only:
// becoming another user and mounting need it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <dirent.h>
#include <fstream>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "config/config.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tier/cache_entries.hpp"

using namespace dlstage;

namespace {
// <tmp>/tier/.cache/nobody/ as the prolog makes it, and a state_dir.
struct Cache {
    test::TempDir tmp;
    std::string root = tmp / "tier";
    std::string state = tmp / "state";
    const passwd* nobody = ::getpwnam("nobody");
    std::string user_dir = root + "/.cache/nobody";
    dlstage::Tier tier;

    Cache()
    {
        BOOST_REQUIRE(nobody);
        BOOST_REQUIRE(::chmod(tmp.path().c_str(), 0755) == 0);  // nobody walks down from here
        test::make_dir(root);
        test::make_dir(root + "/.cache");
        test::make_dir(user_dir, 0700);
        test::make_dir(state);
        give(user_dir);
        tier.name = "cache";
        tier.path = PathTemplate::parse(root + "/%j");
        tier.cleanup = Cleanup::Cache;
    }

    void give(const std::string& path) const
    {
        BOOST_REQUIRE(::chown(path.c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
    }

    // A dataset's copy: a directory holding one file.
    void entry(const std::string& name) const
    {
        test::make_dir(user_dir + "/" + name);
        test::make_file(user_dir + "/" + name + "/f", std::string(5000, 'x'));
        give(user_dir + "/" + name);
        give(user_dir + "/" + name + "/f");
    }

    // The user's whole directory, not listed in time; their jobs here use
    // `kept`.
    NodeCacheEntry unlisted(std::set<std::string> kept = {}) const
    {
        NodeCacheEntry e = owned("");
        e.unlisted = true;
        e.measured = false;
        e.owner_datasets = std::move(kept);
        return e;
    }

    NodeCacheEntry owned(const std::string& dataset) const
    {
        NodeCacheEntry e;
        e.user = "nobody";
        e.uid = nobody->pw_uid;
        e.gid = nobody->pw_gid;
        e.dataset = dataset;
        return e;
    }
};

// "DATASET FILES" per entry, then "problem: LINE" per problem.
std::string listing(const FoundCacheEntries& found)
{
    std::string text;
    for (const NodeCacheEntry& e : found.entries)
        text += e.dataset + " " + std::to_string(e.files) + (e.bytes >= (1u << 20) ? " large" : "") + "\n";
    for (const std::string& problem : found.problems)
        text += "problem: " + problem + "\n";
    return text;
}

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

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

BOOST_AUTO_TEST_SUITE(node_cache)

// The hostile user's case: a FUSE server of theirs, stopped, on a directory
// in their own cache directory.  The measuring child is that user, so FUSE
// lets it in; it must not even try.
BOOST_AUTO_TEST_CASE(a_stopped_fuse_mount_in_a_users_cache_directory_is_neither_entered_nor_measured)
{
    if (test::cannot_mount())
        return;
    Cache c;
    c.entry("imagenet");
    test::make_dir(c.user_dir + "/zz");
    c.give(c.user_dir + "/zz");
    test::make_dir(c.tmp / "content");
    test::make_file(c.tmp / "content/f");
    const std::string point = c.user_dir + "/zz";
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", point,
        [&] {
            ::alarm(30);  // a hang ends the child: "ended abnormally"
            const auto start = std::chrono::steady_clock::now();
            std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            out += "evict zz: " + evict_cache_entry(c.tier, c.owned("zz"), 10) + "\n";
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    const std::string why =
        point + ": a mount (fuse.squashfuse) at " + point + "; not entered: neither measured nor evicted";
    BOOST_TEST(text == "imagenet 1\nproblem: " + why + "\nevict zz: " + why + "\n");
}

BOOST_AUTO_TEST_CASE(a_mount_on_the_users_cache_directory_itself_leaves_all_of_it_alone)
{
    if (test::cannot_mount())
        return;
    Cache c;
    test::make_dir(c.tmp / "content");
    test::make_dir(c.tmp / "content/imagenet");
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", c.user_dir,
        [&] {
            ::alarm(30);
            const auto start = std::chrono::steady_clock::now();
            std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            out += "evict imagenet: " + evict_cache_entry(c.tier, c.owned("imagenet"), 10) + "\n";
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    const std::string why =
        c.user_dir + ": a mount (fuse.squashfuse) at " + c.user_dir + "; not entered: neither measured nor evicted";
    BOOST_TEST(text == "problem: " + why + "\nevict imagenet: " + why + "\n");
}

// The hostile case of an aside: the user's stopped FUSE server on the
// directory a prolog moved aside (it is still theirs).  Root detaches it
// from mountinfo, never asking the server, then measures what is beneath.
BOOST_AUTO_TEST_CASE(a_stopped_fuse_mount_on_a_moved_aside_directory_is_detached_then_measured)
{
    if (test::cannot_mount())
        return;
    Cache c;
    c.entry("x");
    const std::string aside = c.root + "/.cache/nobody.untrusted-20261129T080000Z-9";
    BOOST_REQUIRE(::rename(c.user_dir.c_str(), aside.c_str()) == 0);
    test::make_dir(c.tmp / "content");
    const std::string text = test::with_stopped_fuse(
        c.tmp / "content", c.tmp / "image.sqfs", aside,
        [&] {
            ::alarm(30);
            const auto start = std::chrono::steady_clock::now();
            const std::string out = listing(find_cache_entries(c.tier, c.state, "n1", 10, 30));
            return out + (seconds_since(start) < 5 ? "" : "slow\n");
        },
        true);
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "nobody.untrusted-20261129T080000Z-9 1\n");
}

// Names are the user's: one made to look like the measuring child's
// answer for a huge entry must be measured as the small thing it is.
BOOST_AUTO_TEST_CASE(an_entry_name_cannot_forge_the_measurement)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::string forged = "x 999999999999 1 1\nlru9 999999999999 1 1";
    c.entry(forged);
    c.entry("lru1");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == "lru1 1\n" + forged + " 1\n");
    for (const NodeCacheEntry& e : found.entries) {
        BOOST_TEST(e.bytes < (1u << 20));
        BOOST_TEST(e.inodes == 2u);
    }
    const NodeCacheEntry& odd = found.entries.at(1);
    BOOST_TEST(entry_name(odd).find('\n') == std::string::npos, entry_name(odd));
    // Evicting it removes that entry and nothing else.
    BOOST_TEST(evict_cache_entry(c.tier, odd, 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/" + forged));
    BOOST_TEST(test::exists(c.user_dir + "/lru1/f"));
}

// A thousand links to one file are one file's worth of room: counted more,
// they would make root evict other users' entries for nothing.
BOOST_AUTO_TEST_CASE(a_file_with_many_links_counts_once)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    const std::string file = c.user_dir + "/x/big";
    test::make_file(file, std::string(64 << 10, 'l'));
    for (int i = 0; i < 100; ++i)
        BOOST_REQUIRE(::link(file.c_str(), (c.user_dir + "/x/l" + std::to_string(i)).c_str()) == 0);
    test::make_dir(c.user_dir + "/y");
    BOOST_REQUIRE(::link(file.c_str(), (c.user_dir + "/y/l").c_str()) == 0);
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_REQUIRE(found.entries.size() == 2u);
    BOOST_TEST(found.entries[0].bytes < (200u << 10));  // x: 5000 bytes and 64 KiB, once
    BOOST_TEST(found.entries[0].inodes == 3u);          // x, f, big
    BOOST_TEST(found.entries[1].inodes == 1u);          // y alone: its link was counted in x
}

// Nothing in a cache directory is out of the watermarks' reach: a name no
// dataset has is an entry of its own, and evicting an entry takes every
// name of it.
BOOST_AUTO_TEST_CASE(every_name_counts_and_an_eviction_takes_all_of_an_entry)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry(".stash");
    c.entry(".retired-x-17");
    c.entry(".retired-x-y-18");  // dataset x-y's, not x's
    test::make_file(c.user_dir + "/.ready-x.toml");
    c.give(c.user_dir + "/.ready-x.toml");
    const FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == ".stash 1\nx 1\nx-y 0\n");
    BOOST_TEST(evict_cache_entry(c.tier, c.owned("x"), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/x"));
    BOOST_TEST(!test::exists(c.user_dir + "/.retired-x-17"));
    BOOST_TEST(!test::exists(c.user_dir + "/.ready-x.toml"));
    BOOST_TEST(test::exists(c.user_dir + "/.retired-x-y-18"));
    BOOST_TEST(evict_cache_entry(c.tier, c.owned(".stash"), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir + "/.stash"));
}

// A user's cache directory a prolog moved aside (it held a mount): all of
// it one entry of its owner's, measured and evicted as theirs, even one the
// owner opened to others (0755); one of root's is left to the admin.
BOOST_AUTO_TEST_CASE(a_cache_directory_moved_aside_is_an_entry_and_can_be_evicted)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    const std::string aside = c.root + "/.cache/nobody.untrusted-20261129T080000Z-7";
    BOOST_REQUIRE(::rename(c.user_dir.c_str(), aside.c_str()) == 0);
    BOOST_REQUIRE(::chmod(aside.c_str(), 0755) == 0);
    test::make_dir(c.root + "/.cache/root.untrusted-20261129T080000Z-8");
    // One of a uid no passwd entry names, and a file (neither made by a prolog).
    const std::string gone_user = c.root + "/.cache/gone.untrusted-20261129T080000Z-10";
    test::make_dir(gone_user, 0700);
    test::make_file(gone_user + "/f", "x");
    BOOST_REQUIRE(::chown(gone_user.c_str(), 54321, 54321) == 0 &&
                  ::chown((gone_user + "/f").c_str(), 54321, 54321) == 0);
    test::make_file(c.root + "/.cache/file.untrusted-20261129T080000Z-11", "x");
    // Not the form tier_walk gives: a user's directory, however it is named.
    test::make_dir(c.root + "/.cache/x.untrusted-yesterday", 0700);
    FoundCacheEntries found = find_cache_entries(c.tier, c.state, "n1", 10, 30);
    BOOST_TEST(listing(found) == "gone.untrusted-20261129T080000Z-10 1\nnobody.untrusted-20261129T080000Z-7 1\n"
                                 "problem: " +
                                     c.root +
                                     "/.cache/x.untrusted-yesterday: no such user\n"
                                     "problem: " +
                                     c.root +
                                     "/.cache/file.untrusted-20261129T080000Z-11: moved aside, but "
                                     "not a directory; neither measured nor evicted, left for the admin\n"
                                     "problem: " +
                                     c.root +
                                     "/.cache/root.untrusted-20261129T080000Z-8: moved aside, but "
                                     "root's; neither measured nor evicted, left for the admin\n");
    BOOST_REQUIRE(found.entries.size() == 2u);
    BOOST_TEST(found.entries[0].user == "uid 54321");
    BOOST_TEST(evict_cache_entry(c.tier, found.entries[0], 10) == "");
    BOOST_TEST(!test::exists(gone_user));
    found.entries.erase(found.entries.begin());
    const NodeCacheEntry& e = found.entries[0];
    BOOST_TEST(e.aside);
    BOOST_TEST(e.user == "nobody");
    BOOST_TEST(e.bytes >= 5000u);
    BOOST_TEST(e.changed > 0);
    BOOST_TEST(entry_name(e) == "nobody.untrusted-20261129T080000Z-7 (moved aside)");
    BOOST_TEST(evict_cache_entry(c.tier, e, 10) == "");
    BOOST_TEST(!test::exists(aside));
    BOOST_TEST(test::exists(c.root + "/.cache/root.untrusted-20261129T080000Z-8"));
}

// All of the measuring has one deadline, however many users' directories
// there are: those whose turn comes after it are left out, said so (only a
// child that had its share and could not list makes an entry of unknown
// size: 55-cache-attacks holds one).
BOOST_AUTO_TEST_CASE(measuring_stops_at_its_overall_deadline)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    BOOST_TEST(listing(find_cache_entries(c.tier, c.state, "n1", 10, 0)) ==
               "problem: " + c.user_dir +
                   ": not measured: the 0 s for measuring the node cache are up; its entries are left out\n");
    const FoundCacheEntries measured = find_cache_entries(c.tier, c.state, "n1", 10, 10);
    BOOST_TEST(listing(measured) == "x 1\n");
    BOOST_TEST(measured.entries.at(0).measured);
    BOOST_TEST(entry_name(c.unlisted()) == "nobody's cache directory (not listed in time)");
}

// A record being replaced (".NAME.tmp.PID.X") is its dataset's: an
// eviction that keeps a dataset keeps it too.
BOOST_AUTO_TEST_CASE(a_record_being_replaced_belongs_to_its_dataset)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    test::make_file(c.user_dir + "/..ready-x.toml.tmp.42.abc", "");
    c.give(c.user_dir + "/..ready-x.toml.tmp.42.abc");
    BOOST_TEST(listing(find_cache_entries(c.tier, c.state, "n1", 10, 10)) == "x 1\n");
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted({"x"}), 10) == "");
    BOOST_TEST(test::exists(c.user_dir + "/..ready-x.toml.tmp.42.abc"));
}

// A directory not listed in time whose owner has no job here: moved aside
// at once (no listing needed), then removed as its time allows.
BOOST_AUTO_TEST_CASE(an_unlisted_directory_of_an_idle_owner_is_moved_aside_and_removed)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry("y");
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted(), 10) == "");
    BOOST_TEST(!test::exists(c.user_dir));
    DIR* parent = ::opendir((c.root + "/.cache").c_str());
    BOOST_REQUIRE(parent);
    std::vector<std::string> left;
    while (const dirent* d = ::readdir(parent))
        if (d->d_name[0] != '.')
            left.push_back(d->d_name);
    ::closedir(parent);
    BOOST_TEST(left.empty(), "left in the cache parent: " << (left.empty() ? "" : left.front()));
}

// Its owner has a job here using x: everything but x's names goes, ready
// records included; x's stay.
BOOST_AUTO_TEST_CASE(an_unlisted_directory_keeps_the_datasets_its_owners_jobs_use)
{
    if (!test::is_root())
        return;
    Cache c;
    c.entry("x");
    c.entry("y");
    c.entry(".partial-x");
    for (const char* record : {".ready-x.toml", ".ready-y.toml"}) {
        test::make_file(c.user_dir + "/" + record, "");
        c.give(c.user_dir + "/" + record);
    }
    BOOST_TEST(evict_cache_entry(c.tier, c.unlisted({"x"}), 10) == "");
    BOOST_TEST(test::exists(c.user_dir + "/x/f"));
    BOOST_TEST(test::exists(c.user_dir + "/.partial-x/f"));
    BOOST_TEST(test::exists(c.user_dir + "/.ready-x.toml"));
    BOOST_TEST(!test::exists(c.user_dir + "/y"));
    BOOST_TEST(!test::exists(c.user_dir + "/.ready-y.toml"));
}

BOOST_AUTO_TEST_CASE(the_lock_is_waited_for_with_a_deadline)
{
    if (!test::is_root())
        return;
    Cache c;
    {
        const CacheLock held(c.state, "n1", 1);
        const auto start = std::chrono::steady_clock::now();
        const std::string error = test::error_of([&] { const CacheLock second(c.state, "n1", 1); });
        const double waited = seconds_since(start);
        BOOST_TEST(error == "the node cache lock " + c.state +
                                "/cache/n1/lock is still held after 1 s (a prolog, an "
                                "epilog or another gc on this node)");
        BOOST_TEST(waited >= 0.9);
        BOOST_TEST(waited < 5.0);
    }
    BOOST_TEST(test::error_of([&] { const CacheLock again(c.state, "n1", 1); }) == "");
}

// Measuring goes without the lock: whoever evicts compares this number,
// taken before measuring, with the one under the lock.
BOOST_AUTO_TEST_CASE(each_eviction_changes_the_generation)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::uint64_t before = eviction_generation(c.state, "n1");
    BOOST_TEST(before == 0u);
    count_eviction(c.state, "n1");
    const std::uint64_t once = eviction_generation(c.state, "n1");
    count_eviction(c.state, "n1");
    BOOST_TEST(once != before);
    BOOST_TEST(eviction_generation(c.state, "n1") != once);
    BOOST_TEST(eviction_generation(c.state, "n2") == 0u);  // per node
}

// Root's records name users' datasets and jobs: private, whatever an
// earlier release left; each job's record carries when it was written.
BOOST_AUTO_TEST_CASE(roots_records_are_private_and_carry_when_they_were_written)
{
    if (!test::is_root())
        return;
    Cache c;
    const std::string base = c.state + "/cache/n1";
    test::make_dir(c.state + "/cache");
    test::make_dir(base, 0755);
    test::make_dir(base + "/last-use", 0755);
    test::make_file(base + "/last-use/cache.65534.old", "");
    BOOST_REQUIRE(::chmod((base + "/last-use/cache.65534.old").c_str(), 0644) == 0);
    const auto before = static_cast<std::int64_t>(::time(nullptr));
    record_cache_use(c.state, "n1", "42", {{"cache", "nobody", c.nobody->pw_uid, "old"}});
    const auto mode = [](const std::string& path) {
        struct stat st {};
        BOOST_REQUIRE(::lstat(path.c_str(), &st) == 0);
        return st.st_mode & 07777;
    };
    BOOST_TEST(mode(base) == 0700u);
    BOOST_TEST(mode(base + "/jobs") == 0700u);
    BOOST_TEST(mode(base + "/last-use") == 0700u);
    BOOST_TEST(mode(base + "/jobs/42.toml") == 0600u);
    BOOST_TEST(mode(base + "/last-use/cache.65534.old") == 0600u);
    const std::vector<CacheUseRecord> records = cache_use_records(c.state, "n1");
    BOOST_REQUIRE(records.size() == 1u);
    BOOST_TEST(records[0].job == "42");
    BOOST_TEST(records[0].written >= before);
    BOOST_TEST(records[0].written <= static_cast<std::int64_t>(::time(nullptr)));
}

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

BOOST_AUTO_TEST_SUITE_END()
