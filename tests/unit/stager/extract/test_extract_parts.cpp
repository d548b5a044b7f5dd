// stager/extract/extract_parts: the unpacking each format takes, chosen in
// one place: tar shards into a directory made for them, one squashfs image, and
// a part at a time for the formats whose parts several ranks unpack.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include "stager/extract/extract_parts.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/extract_fixtures.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

BOOST_AUTO_TEST_SUITE(extract_parts_by_format)

BOOST_AUTO_TEST_CASE(tar_shards_go_into_a_directory_made_for_them_and_may_go_part_by_part)
{
    test::TempDir dir;
    const std::vector<std::string> shards = {dir / "s0.tar", dir / "s1.tar"};
    test::write_archive(shards[0], {test::file("a/0", "zero")});
    test::write_archive(shards[1], {test::file("a/1", "one")});
    ExtractBudget unlimited;
    BOOST_TEST(unpacks_into_existing_dir(Format::Tar));
    BOOST_REQUIRE(::mkdir((dir / "out").c_str(), 0755) == 0);
    const ExtractStats all = extract_parts(
        Format::Tar, shards, dir / "out", dir.path(), 2, [] {}, unlimited);
    BOOST_TEST(all.bytes == 7u);
    BOOST_TEST(test::content_of(dir / "out/a/1") == "one");
    BOOST_TEST(extracts_part_by_part(Format::Tar));
    ShardOutcome outcome;
    BOOST_REQUIRE(::mkdir((dir / "one").c_str(), 0755) == 0);
    BOOST_TEST(extract_part(Format::Tar, shards[0], dir / "one", outcome, unlimited).bytes == 4u);
    BOOST_TEST(outcome.names == std::vector<std::string>({"a/0"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_image_is_unpacked_whole_by_one_and_a_plain_file_not_at_all)
{
    test::SquashStaging s;
    s.make_file("f", "image");
    s.make_image();
    ExtractBudget unlimited;
    BOOST_TEST(!unpacks_into_existing_dir(Format::Squashfs));
    extract_parts(
        Format::Squashfs, {s.image}, s.dest, s.tmp.path(), 2, [] {}, unlimited);
    BOOST_TEST(test::content_of(s.in_dest("f")) == "image");
    BOOST_TEST(!extracts_part_by_part(Format::Squashfs));
    ShardOutcome outcome;
    BOOST_TEST(test::error_of([&] { extract_part(Format::Squashfs, s.image, s.dest, outcome, unlimited); }) ==
               "the parts of a dataset of format squashfs are unpacked all together");
    BOOST_TEST(test::error_of([&] {
                   extract_parts(
                       Format::File, {s.image}, s.tmp / "no", "", 1, [] {}, unlimited);
               }) == "a dataset of format file is not unpacked: it is staged as it is");
}

BOOST_AUTO_TEST_SUITE_END()
