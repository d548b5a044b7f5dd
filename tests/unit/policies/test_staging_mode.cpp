#include <boost/test/unit_test.hpp>

#include "policies/staging_mode.hpp"

using namespace dlstage;
using namespace dlstage::policy;

BOOST_AUTO_TEST_SUITE(staging_mode)

BOOST_AUTO_TEST_CASE(copy_takes_any_format)
{
    for (const Format format : {Format::Auto, Format::Dir, Format::File, Format::Tar, Format::Squashfs})
        BOOST_TEST(mode_takes(Mode::Copy, format, false));
}

BOOST_AUTO_TEST_CASE(extract_takes_archives_mount_one_image)
{
    BOOST_TEST(mode_takes(Mode::Extract, Format::Tar, false));
    BOOST_TEST(mode_takes(Mode::Extract, Format::Squashfs, true));
    BOOST_TEST(!mode_takes(Mode::Extract, Format::Dir, false));
    BOOST_TEST(!mode_takes(Mode::Extract, Format::Auto, true));
    BOOST_TEST(mode_takes(Mode::Mount, Format::Squashfs, true));
    BOOST_TEST(!mode_takes(Mode::Mount, Format::Squashfs, false));
    BOOST_TEST(!mode_takes(Mode::Mount, Format::Tar, true));
}

BOOST_AUTO_TEST_CASE(shards_sit_in_one_directory_and_a_directory_is_a_dir)
{
    BOOST_TEST(source_fits_format({"/d/s-*.tar", Format::Tar, false, 1}).allowed);
    BOOST_TEST(source_fits_format({"/d/*/s-*.tar", Format::Tar, false, 2}).reason ==
               "tar shards must sit in one directory: '/d/*/s-*.tar'");
    BOOST_TEST(source_fits_format({"/d/data", Format::Auto, true, 0}).allowed);
    BOOST_TEST(source_fits_format({"/d/data", Format::Dir, true, 0}).allowed);
    BOOST_TEST(source_fits_format({"/d/data.tar", Format::Tar, true, 0}).reason ==
               "'/d/data.tar' is a directory, but the dataset's format is tar");
    BOOST_TEST(source_fits_format({"/d/data.tar", Format::Tar, false, 0}).allowed);
}

BOOST_AUTO_TEST_CASE(the_catalog_says_what_to_declare)
{
    BOOST_TEST(mode_fits_declared_format(Mode::Extract, Format::Tar).allowed);
    BOOST_TEST(mode_fits_declared_format(Mode::Extract, Format::Auto).reason ==
               "mode = \"extract\" needs tar shards or a squashfs image; set format = \"tar\" or \"squashfs\" if "
               "the source name does not show it");
    BOOST_TEST(mode_fits_declared_format(Mode::Mount, Format::Tar).reason ==
               "mode = \"mount\" needs a squashfs image (.sqfs); build one with 'dlstage pack'");
    // An image set (a glob of .sqfs): unpacked or copied, never mounted.
    BOOST_TEST(mode_fits_declared_format(Mode::Extract, Format::Squashfs, true).allowed);
    BOOST_TEST(mode_fits_declared_format(Mode::Mount, Format::Squashfs, false).allowed);
    BOOST_TEST(mode_fits_declared_format(Mode::Mount, Format::Squashfs, true).reason ==
               "mode = \"mount\" mounts one squashfs image, not a glob of them; use mode = \"extract\" (each image "
               "unpacked into one directory) or \"copy\"");
    BOOST_TEST(is_part_glob("/p/set/part-*.sqfs", Format::Squashfs));
    BOOST_TEST(is_part_glob("/p/wds/shard-*", Format::Tar));
    BOOST_TEST(!is_part_glob("/p/one.sqfs", Format::Squashfs));
    BOOST_TEST((format_from_name("/p/set/part-*.sqfs") == Format::Squashfs));
}

BOOST_AUTO_TEST_CASE(the_stager_says_what_it_found)
{
    BOOST_TEST(mode_fits_source(Mode::Mount, Format::Squashfs, true, "/p/x.sqfs").allowed);
    BOOST_TEST(mode_fits_source(Mode::Extract, Format::Dir, false, "/p/x").reason ==
               "mode = \"extract\" needs tar shards or a squashfs image, but /p/x is a dir");
    BOOST_TEST(mode_fits_source(Mode::Mount, Format::File, true, "/p/x.img").reason ==
               "mode = \"mount\" needs one squashfs image, but /p/x.img is a file");
}

BOOST_AUTO_TEST_CASE(a_directory_copied_without_a_manifest_is_walked_while_it_moves)
{
    WalkFacts facts;
    facts.source_is_dir = true;
    BOOST_TEST(walks_while_transferring(facts));
    WalkFacts other = facts;
    other.has_manifest = true;
    BOOST_TEST(!walks_while_transferring(other));
    other = facts;
    other.source_is_dir = false;
    BOOST_TEST(!walks_while_transferring(other));
    other = facts;
    other.scope = Scope::Shared;
    BOOST_TEST(walks_while_transferring(other));  // the first copy in a shared tier
    other.copy_there = true;                      // one to reuse, refresh or go on from
    BOOST_TEST(!walks_while_transferring(other));
    other = facts;
    other.cleanup = Cleanup::Cache;
    BOOST_TEST(!walks_while_transferring(other));
    for (const Mode mode : {Mode::Extract, Mode::Mount}) {
        other = facts;
        other.mode = mode;
        BOOST_TEST(!walks_while_transferring(other));
    }
}

BOOST_AUTO_TEST_SUITE_END()
