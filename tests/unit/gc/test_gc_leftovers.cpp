// gc/gc_leftovers: what `dlstage gc` finds in tiers and state_dir, and
// how it removes it, on trees in a temporary directory (the trusted levels
// are the caller's own, as root's are when gc runs).
#include <algorithm>

#include "config/config.hpp"
#include "gc/gc_leftovers.hpp"
#include "lib/strings.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tests/unit/support/stopped_fuse.hpp"

using namespace dlstage;
using namespace dlstage::test;
using dlstage::policy::GcKind;

namespace {
dlstage::Tier tier_at(const std::string& path, Scope scope = Scope::Node)
{
    dlstage::Tier t;
    t.name = "t";
    t.path = PathTemplate::parse(path);
    t.scope = scope;
    return t;
}

// "KIND JOB NAME" per leftover, then the skipped lines: compared whole.
std::string listing(const Found& found)
{
    std::string text;
    for (const Leftover& l : found.leftovers)
        text += std::string(l.kind == GcKind::JobDir  ? "dir"
                            : l.kind == GcKind::Claim ? "claim"
                                                      : "records") +
                " " + l.job_id + " " + std::string(base_name(l.path)) + (l.mounted ? " mounted" : "") + "\n";
    for (const std::string& line : found.skipped)
        text += "skipped: " + line + "\n";
    return text;
}

const Leftover& named(const Found& found, const std::string& name)
{
    const auto it = std::find_if(found.leftovers.begin(), found.leftovers.end(),
                                 [&](const Leftover& l) { return base_name(l.path) == name; });
    BOOST_REQUIRE(it != found.leftovers.end());
    return *it;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(gc_leftovers)

BOOST_AUTO_TEST_CASE(a_node_tier_holds_job_directories_and_nothing_else_counts)
{
    const Umask umask(022);
    test::TierDir tier;
    for (const char* dir : {"12", "13", "notajob", "012", "12.removing-n1", "x.untrusted-1"})
        make_dir(tier.root + "/" + dir, 0700);
    make_file(tier.root + "/14");
    make_dir(tier.root + "/13/.partial-imagenet");
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%j"), "n1");
    BOOST_TEST(listing(found) ==
               "dir 12 12\ndir 13 13\nskipped: " + tier.root + "/14 is not a directory; left in place\n");
    const Leftover& l = named(found, "13");
    BOOST_TEST(l.root == tier.root);
    BOOST_TEST(!l.shared);
    BOOST_TEST(l.changed >= lstat_of(tier.root + "/13").st_mtime);
}

BOOST_AUTO_TEST_CASE(levels_above_the_job_directory_are_walked_by_the_template)
{
    const Umask umask(022);
    test::TierDir tier;
    make_dir(tier.root + "/alice");
    make_dir(tier.root + "/alice/job-5-n1");
    make_dir(tier.root + "/alice/job-6-n2");  // another node's (a tier every node sees)
    make_dir(tier.root + "/bob");
    make_dir(tier.root + "/bob/job-7-n1");
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%u/job-%j-%n"), "n1");
    BOOST_TEST(listing(found) == "dir 5 job-5-n1\ndir 7 job-7-n1\n");
}

BOOST_AUTO_TEST_CASE(a_shared_tier_has_claims_of_any_node_removed_through_this_nodes_claim)
{
    const Umask umask(022);
    test::TierDir tier;
    make_dir(tier.root + "/7");
    make_dir(tier.root + "/8.removing-n2");
    make_file(tier.root + "/8.removing-n2/f");
    make_dir(tier.root + "/x.removing-n2");
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%j", Scope::Shared), "n1");
    BOOST_TEST(listing(found) == "dir 7 7\nclaim 8 8.removing-n2\n");
    BOOST_TEST(named(found, "8.removing-n2").job_name == "8");
    BOOST_TEST(outcome(remove_leftover(named(found, "8.removing-n2"), "n1")) == "removed=2");
    BOOST_TEST(outcome(remove_leftover(named(found, "7"), "n1")) == "removed=1");
    BOOST_TEST(entries_in(tier.root) == 1);  // x.removing-n2: no job's
}

BOOST_AUTO_TEST_CASE(an_untrusted_tier_root_is_skipped_and_a_missing_one_holds_nothing)
{
    const Umask umask(0);
    test::TierDir tier;
    make_dir(tier.root + "/12");
    BOOST_REQUIRE(::chmod(tier.root.c_str(), 0777) == 0);
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%j"), "n1");
    BOOST_TEST(found.leftovers.empty());
    BOOST_REQUIRE(found.skipped.size() == 1u);
    BOOST_TEST(found.skipped.front() == "tier 't' skipped: tier root " + tier.root +
                                            " is writable by group or others (mode 0777); refusing to use it");
    BOOST_TEST(mode_of(tier.root) == 0777u);  // never repaired
    BOOST_TEST(listing(find_tier_leftovers(tier_at(tier.tmp / "none/%j"), "n1")).empty());
}

BOOST_AUTO_TEST_CASE(removal_takes_the_directory_and_what_the_stager_left_in_it)
{
    const Umask umask(022);
    test::TierDir tier;
    make_dir(tier.root + "/12");
    make_dir(tier.root + "/12/.partial-imagenet");
    make_file(tier.root + "/12/.partial-imagenet/a");
    make_link("/etc/passwd", tier.root + "/12/link");
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%j"), "n1");
    const RemoveResult result = remove_leftover(named(found, "12"), "n1");
    BOOST_TEST(outcome(result) == "removed=4");
    BOOST_TEST(!exists(tier.root + "/12"));
    BOOST_TEST(exists("/etc/passwd"));
    BOOST_TEST(outcome(remove_leftover(named(found, "12"), "n1")) == "removed=0");  // gone meanwhile: done
}

BOOST_AUTO_TEST_CASE(job_records_are_found_and_removed_users_part_first)
{
    const Umask umask(022);
    test::TempDir tmp;
    const std::string state = tmp / "state";
    make_dir(state);
    make_dir(state + "/jobs");
    make_dir(state + "/jobs/42");
    make_file(state + "/jobs/42/n1.epilog.toml");
    make_dir(state + "/jobs/42/user", 0700);
    make_file(state + "/jobs/42/user/progress-x.toml");
    make_dir(state + "/jobs/not-a-job");
    make_dir(state + "/jobs/43.removing-n2");  // gc on n2 claimed them and stopped
    make_file(state + "/jobs/43.removing-n2/n2.epilog.toml");
    const Found found = find_job_records(state);
    BOOST_TEST(listing(found) == "records 42 42\nclaim 43 43.removing-n2\n");
    BOOST_TEST(named(found, "42").changed == lstat_of(state + "/jobs/42").st_mtime);
    // Claimed first (42.removing-n1), so gc on other nodes finds nothing.
    BOOST_TEST(outcome(remove_leftover(named(found, "42"), "n1")) == "removed=4");
    BOOST_TEST(outcome(remove_leftover(named(found, "43.removing-n2"), "n1")) == "removed=2");
    BOOST_TEST(entries_in(state + "/jobs") == 1);
    BOOST_TEST(exists(state + "/jobs/not-a-job"));
    BOOST_TEST(outcome(remove_leftover(named(found, "42"), "n3")) == "removed=0");  // gone: done
    BOOST_TEST(listing(find_job_records(tmp / "none")).empty());
}

BOOST_AUTO_TEST_CASE(another_users_data_in_a_job_directory_stays)
{
    if (!is_root())
        return;  // needs root to plant it, as an attacker moving it in would
    const Umask umask(022);
    test::TierDir tier;
    make_dir(tier.root + "/12", 0700);
    BOOST_REQUIRE(::chown((tier.root + "/12").c_str(), kOtherUid, kOtherGid) == 0);
    make_dir(tier.root + "/12/planted", 0755);  // root's, in the user's directory
    make_file(tier.root + "/12/planted/f");
    const Found found = find_tier_leftovers(tier_at(tier.root + "/%j"), "n1");
    const RemoveResult result = remove_leftover(named(found, "12"), "n1");
    BOOST_TEST(!result.ok());
    BOOST_TEST(exists(tier.root + "/12/planted/f"));
}

// A FUSE server the job's user stopped, mounted in (or on) an orphan: gc
// finds it, detaches it and removes the directory, never asking the server.
BOOST_AUTO_TEST_CASE(a_stopped_fuse_mount_in_an_orphan_neither_hangs_gc_nor_stays)
{
    if (test::cannot_mount())
        return;
    test::TierDir tier;
    make_dir(tier.root + "/12", 0700);
    make_dir(tier.root + "/12/mnt");
    make_dir(tier.root + "/13", 0700);
    make_dir(tier.tmp / "content");
    make_file(tier.tmp / "content/f");
    const std::string text =
        test::with_stopped_fuse(tier.tmp / "content", tier.tmp / "image.sqfs", tier.root + "/13", [&] {
            ::alarm(10);  // a hang ends the child: "ended abnormally"
            // A second mount, deeper, in the other orphan.
            test::StoppedFuse inner(tier.tmp / "content", tier.tmp / "image2.sqfs", tier.root + "/12/mnt");
            if (!inner.problem.empty())
                return inner.problem;
            const Found found = find_tier_leftovers(tier_at(tier.root + "/%j"), "n1");
            std::string out = listing(found);
            for (const Leftover& l : found.leftovers)
                out += std::string(base_name(l.path)) + ": " + outcome(remove_leftover(l, "n1")) + "\n";
            return out;
        });
    if (test::skipped(text))
        return;
    BOOST_TEST(text == "dir 12 12\ndir 13 13 mounted\n12: removed=2\n13: removed=1\n");
    BOOST_TEST(!exists(tier.root + "/12"));
    BOOST_TEST(!exists(tier.root + "/13"));
}

BOOST_AUTO_TEST_SUITE_END()
