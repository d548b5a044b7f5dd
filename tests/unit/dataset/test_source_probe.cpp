#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "dataset/source_probe.hpp"
#include "tests/unit/support/dataset_at.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
using test::dataset_at;
}  // namespace

BOOST_AUTO_TEST_SUITE(source_facts)

BOOST_AUTO_TEST_CASE(a_file_has_its_size_and_one_inode)
{
    test::TempDir dir;
    const auto facts = probe_source(dataset_at(dir.write("blob.bin", std::string(1000, 'x'))));
    BOOST_TEST((facts.state == SourceFacts::State::Present));
    BOOST_TEST(to_string(facts.format) == "file");
    BOOST_TEST(*facts.bytes == 1000u);
    BOOST_TEST(*facts.files == 1u);
}

BOOST_AUTO_TEST_CASE(a_tree_is_never_walked)
{
    test::TempDir dir;
    dir.write("a", "12345");
    const auto facts = probe_source(dataset_at(dir.path()));
    BOOST_TEST(to_string(facts.format) == "dir");
    BOOST_TEST(!facts.bytes.has_value());
    BOOST_TEST(!facts.files.has_value());
}

BOOST_AUTO_TEST_CASE(tar_shards_add_up)
{
    test::TempDir dir;
    dir.write("s-0.tar", std::string(100, 'a'));
    dir.write("s-1.tar", std::string(250, 'b'));
    dir.write("other.txt", "x");
    const auto facts = probe_source(dataset_at(dir / "s-*.tar"));
    BOOST_TEST(to_string(facts.format) == "tar");
    BOOST_TEST(*facts.bytes == 350u);
    BOOST_TEST(!facts.files.has_value());
}

BOOST_AUTO_TEST_CASE(source_times_see_a_file_a_shard_set_and_a_trees_root)
{
    test::TempDir dir;
    const std::string file = dir.write("blob.bin", "x");
    struct stat st {};
    BOOST_REQUIRE(::stat(file.c_str(), &st) == 0);
    SourceTimes times = source_times(dataset_at(file), "");
    BOOST_TEST(times.present);
    BOOST_TEST(times.newest_ctime == st.st_ctim.tv_sec);
    BOOST_TEST(times.manifest_scanned == 0);

    dir.write("s-0.tar", "a");
    const std::string second = dir.write("s-1.tar", "b");
    BOOST_REQUIRE(::stat(second.c_str(), &st) == 0);
    times = source_times(dataset_at(dir / "s-*.tar"), "");
    BOOST_TEST(times.present);
    BOOST_TEST(times.newest_ctime >= st.st_ctim.tv_sec);  // the newest shard's, or its directory's

    BOOST_TEST(source_times(dataset_at(dir.path()), "").present);
    BOOST_TEST(!source_times(dataset_at(dir / "none-*.tar"), "").present);
    BOOST_TEST(!source_times(dataset_at(dir / "gone"), "").present);
}

BOOST_AUTO_TEST_CASE(a_source_unfit_for_its_format_is_found_at_submit)
{
    test::TempDir dir;
    mkdir((dir / "a").c_str(), 0755);
    mkdir((dir / "b").c_str(), 0755);
    mkdir((dir / "tree.tar").c_str(), 0755);
    dir.write("a/s-0.tar", "x");
    dir.write("b/s-1.tar", "y");
    auto facts = probe_source(dataset_at(dir / "*/s-*.tar"));
    BOOST_TEST((facts.state == SourceFacts::State::Unfit));
    BOOST_TEST(facts.problem == "tar shards must sit in one directory: '" + dir / "*/s-*.tar'");
    facts = probe_source(dataset_at(dir / "tree.tar"));
    BOOST_TEST((facts.state == SourceFacts::State::Unfit));
    BOOST_TEST(facts.problem == "'" + dir / "tree.tar' is a directory, but the dataset's format is tar");
}

BOOST_AUTO_TEST_CASE(missing_sources_and_empty_globs)
{
    test::TempDir dir;
    auto facts = probe_source(dataset_at(dir / "nope"));
    BOOST_TEST((facts.state == SourceFacts::State::Missing));
    BOOST_TEST(facts.problem == "cannot read " + dir / "nope" + ": No such file or directory");
    facts = probe_source(dataset_at(dir / "*.tar"));
    BOOST_TEST((facts.state == SourceFacts::State::Missing));
}

BOOST_AUTO_TEST_CASE(unreadable_source_as_an_unprivileged_user)
{
    if (geteuid() == 0) {
        // root reads everything; the cluster tests cover this as the test user.
        BOOST_TEST_MESSAGE("skipped as root");
        return;
    }
    test::TempDir dir;
    const std::string file = dir.write("secret", "x");
    chmod(file.c_str(), 0);
    BOOST_TEST((probe_source(dataset_at(file)).state == SourceFacts::State::Unreadable));
}

BOOST_AUTO_TEST_SUITE_END()
