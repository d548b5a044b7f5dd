#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "stager/manifest.hpp"
#include "tests/unit/dataset_at.hpp"
#include "tests/unit/error_of.hpp"
#include "tests/unit/tmpdir.hpp"

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

const std::string kHeader = "dlstage-manifest 1\ndataset d\nsource /s\nroot /s\nformat dir\nsingle_file 0\n"
                            "scanned 1\nfiles 1\nbytes 5\nentries 1\n";
}  // namespace

BOOST_AUTO_TEST_SUITE(manifest)

BOOST_AUTO_TEST_CASE(a_scan_records_every_entry_with_the_files_digests)
{
    test::TempDir dir;
    const Manifest m = scanned_tree(dir);
    BOOST_TEST(m.plan.file_count() == 4u);
    BOOST_TEST(m.plan.total_bytes() == 6u);
    BOOST_REQUIRE(m.digests.size() == m.plan.entries.size());
    for (std::size_t i = 0; i < m.plan.entries.size(); ++i) {
        const Entry& e = m.plan.entries[i];
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
    BOOST_TEST(back.dataset == "d");
    BOOST_TEST(back.plan.source_root == dir / "src");
    BOOST_TEST(manifest_text(back) == manifest_text(m));
    BOOST_TEST(changes_since(back, m.plan, 5).count == 0u);
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
    const std::string entry = "f\t644\t5\t1.000000000\t00000000000000ab\ta.txt\n";
    BOOST_TEST(parse_manifest(kHeader + entry, "m").plan.entries.size() == 1u);
    BOOST_TEST(parse_error("something else\n").find("m:1: not a dlstage manifest") == 0u);
    BOOST_TEST(parse_error(kHeader).find("m:10: the counts in the header do not match") == 0u);
    BOOST_TEST(parse_error(kHeader + entry.substr(0, entry.size() - 1)).find("no newline") != std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t644\t5\t1.000000000\t00000000000000ab\t../a\n").find("leaves the dataset") !=
               std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t644\t5\t1.000000000\t00000000000000ab\ta\\q\n").find("unknown escape") !=
               std::string::npos);
    BOOST_TEST(parse_error(kHeader + "x\t644\t5\t1.000000000\t-\ta\n").find("unknown entry type") != std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t999\t5\t1.000000000\t00000000000000ab\ta\n").find("octal") != std::string::npos);
    BOOST_TEST(parse_error(kHeader + "f\t644\t5\t1.5\t00000000000000ab\ta\n").find("9 digits") != std::string::npos);
    BOOST_TEST(parse_error("dlstage-manifest 1\ndataset d\n").find("run 'dlstage catalog scan d' again") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
