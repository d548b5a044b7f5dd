#include <boost/test/unit_test.hpp>

#include "policies/unsquashfs.hpp"

using dlstage::policy::parse_unsquashfs_version;
using dlstage::policy::unsquashfs_usable;

BOOST_AUTO_TEST_SUITE(unsquashfs_version)

BOOST_AUTO_TEST_CASE(versions_as_releases_print_them)
{
    const auto v451 = parse_unsquashfs_version("unsquashfs version 4.5.1 (2022/03/17)\ncopyright (C) 2022 Phillip "
                                               "Lougher <phillip@squashfs.org.uk>\n");
    BOOST_REQUIRE(v451);
    BOOST_TEST(v451->major == 4u);
    BOOST_TEST(v451->minor == 5u);
    BOOST_TEST(v451->patch == 1u);
    BOOST_TEST(v451->text == "4.5.1");
    const auto v44 = parse_unsquashfs_version("unsquashfs version 4.4-git (2019/08/15)\n");
    BOOST_REQUIRE(v44);
    BOOST_TEST(v44->minor == 4u);
    BOOST_TEST(v44->patch == 0u);
    BOOST_TEST(v44->text == "4.4-git");
    BOOST_TEST(parse_unsquashfs_version("unsquashfs version 4.6.1 (2023/03/25)")->patch == 1u);
}

BOOST_AUTO_TEST_CASE(anything_else_has_no_version)
{
    for (const char* text : {"", "unsquashfs: invalid option", "unsquashfs version (2022)", "unsquashfs version 4",
                             "unsquashfs version 4.", "unsquashfs version 12345678.1", "\nunsquashfs version 4.5.1"})
        BOOST_TEST(!parse_unsquashfs_version(text), text);
}

BOOST_AUTO_TEST_CASE(before_4_5_1_is_refused_naming_the_version_and_the_fix)
{
    for (const char* ok :
         {"unsquashfs version 4.5.1 (2022/03/17)", "unsquashfs version 4.6 (2023/03/18)", "unsquashfs version 5.0"})
        BOOST_TEST(unsquashfs_usable(ok).allowed, ok);
    BOOST_TEST(unsquashfs_usable("unsquashfs version 4.5 (2021/07/22)").reason ==
               "unsquashfs '4.5' can be made to write outside the destination by a crafted image (CVE-2021-40153, "
               "CVE-2021-41072; fixed in 4.5.1); install squashfs-tools >= 4.5.1 on the compute nodes, or stage the "
               "image with mode = \"mount\"");
    for (const char* old :
         {"unsquashfs version 4.4 (2019/08/29)", "unsquashfs version 4.3-git (2014/09/12)", "unsquashfs version 3.4"})
        BOOST_TEST(!unsquashfs_usable(old).allowed, old);
    BOOST_TEST(unsquashfs_usable("unsquashfs: no such option\nmore").reason ==
               "cannot tell the version of unsquashfs from 'unsquashfs: no such option' (unsquashfs -version), and "
               "only 4.5.1 or later unpacks crafted images safely; install squashfs-tools >= 4.5.1 on the compute "
               "nodes, or stage the image with mode = \"mount\"");
}

BOOST_AUTO_TEST_SUITE_END()
