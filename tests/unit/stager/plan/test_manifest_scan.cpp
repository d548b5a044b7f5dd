#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "stager/plan/manifest_scan.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
// A tree with a file, an empty file, a symlink and names that need escaping.
Manifest scanned_tree(const test::TempDir& dir)
{
    mkdir((dir / "src").c_str(), 0755);
    mkdir((dir / "src/sub dir").c_str(), 0750);
    dir.write("src/a.txt", "hello");
    dir.write("src/sub dir/tab\there\\x", "x");
    dir.write("src/sub dir/line\nbreak", "");
    BOOST_REQUIRE(symlink("a.txt", (dir / "src/link").c_str()) == 0);
    return scan_dataset(test::dataset_at(dir / "src"), 2);
}

std::string parse_error(const std::string& text)
{
    return test::error_of([&] { parse_manifest(text, "m"); });
}

const std::string kHeader = "dlstage-manifest 2\ndataset d\nsource /s\nroot /s\nformat dir\nsingle_file 0\n"
                            "scanned 1\nfiles 1\nbytes 5\nentries 1\nroot_times 1.000000000 2.000000000\n";
}  // namespace

BOOST_AUTO_TEST_SUITE(manifest)

BOOST_AUTO_TEST_CASE(a_scan_records_every_entry_with_the_files_digests)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    BOOST_TEST(m.header.files == 4u);
    BOOST_TEST(m.header.bytes == 6u);
    BOOST_REQUIRE(m.digests.size() == m.entries.size());
    for (std::size_t i = 0; i < m.entries.size(); ++i) {
        const Entry& e = m.entries[i];
        if (e.path == "a.txt")
            BOOST_TEST(m.digests[i] == XXH3_64bits("hello", 5));
        if (e.type != EntryType::File)
            BOOST_TEST(m.digests[i] == 0u);
    }
}

BOOST_AUTO_TEST_CASE(the_text_round_trips_any_name)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    const Manifest back = parse_manifest(manifest_text(m), "m");
    BOOST_TEST(back.header.dataset == "d");
    BOOST_TEST(back.header.root == dir / "src");
    BOOST_TEST(manifest_text(back) == manifest_text(m));
    BOOST_TEST(changes_since(back, build_plan(test::dataset_at(dir / "src")), 5).count == 0u);
    BOOST_TEST(manifest_text(m).find("tab\\there\\\\x") != std::string::npos);
    BOOST_TEST(manifest_text(m).find("line\\nbreak") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(written_and_read_back_whole)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    write_manifest(dir / "d.manifest", m);
    BOOST_TEST(manifest_text(read_manifest(dir / "d.manifest")) == manifest_text(m));
    struct stat st {};
    BOOST_TEST(stat((dir / "d.manifest").c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0644u);
}

BOOST_AUTO_TEST_CASE(changes_name_what_differs)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    dir.write("src/a.txt", "hello!");
    dir.write("src/new", "");
    unlink((dir / "src/link").c_str());
    const SourceChanges changes = changes_since(m, build_plan(test::dataset_at(dir / "src")), 2);
    BOOST_TEST(changes.count == 3u);
    BOOST_REQUIRE(changes.examples.size() == 2u);
    BOOST_TEST(changes.examples[0] == "a.txt: size 5 -> 6");
    BOOST_TEST(changes.examples[1] == "new: added");
}

BOOST_AUTO_TEST_CASE(a_broken_manifest_is_refused_naming_the_line)
{
    const std::string entry = "f\t644\t5\t1.000000000\t-\t00000000000000ab\ta.txt\n";
    BOOST_TEST(parse_manifest(kHeader + entry, "m").entries.size() == 1u);
    BOOST_TEST(parse_error("something else\n").find("m:1: not a dlstage manifest") == 0u);
    BOOST_TEST(parse_error(kHeader).find("m:11: the counts in the header do not match") == 0u);
    BOOST_TEST(parse_error(kHeader + entry.substr(0, entry.size() - 1)).find("no newline") != std::string::npos);
    BOOST_TEST(
        parse_error(kHeader + "f\t644\t5\t1.000000000\t-\t00000000000000ab\t../a\n").find("leaves the dataset") !=
        std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t644\t5\t1.000000000\t-\t00000000000000ab\ta\\q\n").find("unknown escape") !=
               std::string::npos);
    BOOST_TEST(parse_error(kHeader + "x\t644\t5\t1.000000000\t-\t-\ta\n").find("unknown entry type") !=
               std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t999\t5\t1.000000000\t-\t00000000000000ab\ta\n").find("octal") !=
               std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t644\t5\t1.5\t-\t00000000000000ab\ta\n").find("9 digits") != std::string::npos);
    BOOST_TEST(parse_error("dlstage-manifest 2\ndataset d\n").find("run 'dlstage catalog scan d' again") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_header_alone_is_read_however_long_the_rest)
{
    test::TempDir dir;
    // A header, then far more than the 64 KiB a header may take: what
    // follows it is not read (it would not even parse).
    dir.write("big.manifest", kHeader + std::string(1 << 20, '?') + "\n");
    const ManifestHeader h = read_manifest_header(dir / "big.manifest");
    BOOST_TEST(h.dataset == "d");
    BOOST_TEST(h.files == 1u);
    BOOST_TEST(h.bytes == 5u);
    BOOST_TEST(h.root_times.ctime_sec == 2);
    dir.write("nohead.manifest", "dlstage-manifest 2\n" + std::string(100000, 'x') + "\n");
    BOOST_TEST(test::error_of([&] { read_manifest_header(dir / "nohead.manifest"); }).find("longer than 65536 bytes") !=
               std::string::npos);
    dir.write("old.manifest", "dlstage-manifest 1\ndataset d\n");
    BOOST_TEST(test::error_of([&] {
                   read_manifest_header(dir / "old.manifest");
               }).find("a manifest of an older dlstage") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_manifest_others_can_write_is_not_trusted)
{
    test::TempDir dir;
    write_manifest(dir / "d.manifest", scanned_tree(dir));
    BOOST_TEST(untrusted_manifest_reason(dir / "d.manifest") == "");
    chmod((dir / "d.manifest").c_str(), 0664);
    BOOST_TEST(untrusted_manifest_reason(dir / "d.manifest")
                   .find("manifest '" + dir / "d.manifest" + "' is writable by group or others") == 0u);
    chmod((dir / "d.manifest").c_str(), 0644);
    chmod(dir.path().c_str(), 0777);
    BOOST_TEST(untrusted_manifest_reason(dir / "d.manifest").find("directory") == 0u);
    chmod(dir.path().c_str(), 0700);
}

BOOST_AUTO_TEST_CASE(currentness_sees_directories_change_not_files_rewritten_in_place)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    const Dataset d = test::dataset_at(dir / "src");
    struct stat root {};
    const auto root_now = [&] {
        BOOST_REQUIRE(stat((dir / "src").c_str(), &root) == 0);
        return root;
    };
    BOOST_TEST(stale_at_root(m.header, d, root_now()) == "");
    BOOST_TEST(stale_below_root(m, 2) == "");
    // Rewritten in place: no directory changes.  The stager's size and
    // mtime check at open is what catches this one.
    dir.write("src/sub dir/tab\there\\x", "changed");
    BOOST_TEST(stale_at_root(m.header, d, root_now()) == "");
    BOOST_TEST(stale_below_root(m, 2) == "");
    // Added below the root: only the walk over the directories sees it.
    dir.write("src/sub dir/new", "");
    BOOST_TEST(stale_at_root(m.header, d, root_now()) == "");
    BOOST_TEST(stale_below_root(m, 2).find("/src/sub dir changed at") != std::string::npos);
    // Added in the root: one stat sees it.
    dir.write("src/new", "");
    BOOST_TEST(stale_at_root(m.header, d, root_now()).find("changed at") != std::string::npos);
    Dataset moved = d;
    moved.source = dir / "elsewhere";
    BOOST_TEST(stale_at_root(m.header, moved, root_now()).find("scanned from") == 0u);
}

BOOST_AUTO_TEST_CASE(the_stager_plans_from_a_current_manifest_and_walks_otherwise)
{
    test::TempDir dir;
    mkdir((dir / "manifests").c_str(), 0755);
    const Manifest m = scanned_tree(dir);
    write_manifest(dir / "manifests/d.manifest", m);
    const Dataset d = test::dataset_at(dir / "src");
    std::string note;
    const Plan from_manifest = plan_for(dir / "manifests", d, note);
    BOOST_TEST(from_manifest.from_manifest);
    BOOST_TEST(note == "");
    const Plan walked_now = build_plan(d);
    // The same bytes: a shared copy's source identity does not depend on
    // where the plan came from.
    BOOST_TEST(serialize(from_manifest) == serialize(walked_now));
    BOOST_REQUIRE(from_manifest.entries.size() == walked_now.entries.size());
    for (std::size_t i = 0; i < walked_now.entries.size(); ++i) {
        const Entry a = from_manifest.entries[i], b = walked_now.entries[i];
        BOOST_TEST((a.path == b.path && a.type == b.type && a.mode == b.mode && a.size == b.size &&
                    a.mtime_sec == b.mtime_sec && a.mtime_nsec == b.mtime_nsec && a.target == b.target));
    }

    // Not a catalog dataset: its manifest, if any, is not its.
    Dataset path = d;
    path.from_catalog = false;
    BOOST_TEST(!plan_for(dir / "manifests", path, note).from_manifest);

    chmod((dir / "manifests/d.manifest").c_str(), 0666);
    BOOST_TEST(!plan_for(dir / "manifests", d, note).from_manifest);
    BOOST_TEST(note.find("not using the manifest of d: manifest '") == 0u);
    BOOST_TEST(note.find("; planning from a walk") != std::string::npos);
    chmod((dir / "manifests/d.manifest").c_str(), 0644);

    dir.write("src/sub dir/new", "");
    const Plan walked = plan_for(dir / "manifests", d, note);
    BOOST_TEST(!walked.from_manifest);
    BOOST_TEST(walked.entries.size() == m.entries.size() + 1);
    BOOST_TEST(note.find("manifest of d is older than its source (") == 0u);
    BOOST_TEST(note.find("): planning from a walk; run 'dlstage catalog scan d'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
