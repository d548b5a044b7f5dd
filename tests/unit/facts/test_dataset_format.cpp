#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "facts/dataset_format.hpp"

using namespace dlstage;

BOOST_AUTO_TEST_SUITE(dataset_format)

BOOST_AUTO_TEST_CASE(a_name_tells_images_tar_shards_and_nothing_else)
{
    BOOST_TEST(to_string(format_from_name("/p/x/imagenet.sqfs")) == "squashfs");
    BOOST_TEST(to_string(format_from_name("/p/x/imagenet.squashfs")) == "squashfs");
    for (const char* tar : {"/p/x/a.tar", "/p/x/a.tar.gz", "/p/x/a.tgz", "/p/x/a.tar.zst", "/p/x/a.tar.xz",
                            "/p/x/a.tar.bz2", "/p/x/shard-*", "/p/x/shard-?.tar", "/p/x/shard-[0-9]"})
        BOOST_TEST(to_string(format_from_name(tar)) == "tar", tar);
    for (const char* unknown : {"/p/x/imagenet", "/p/x/a.gz", "/p/x/a.zip", "/p/x/sqfs", "/p/x/a.tar/"})
        BOOST_TEST(to_string(format_from_name(unknown)) == "auto", unknown);
}

BOOST_AUTO_TEST_CASE(the_whole_suffix_is_found)
{
    BOOST_TEST(archive_suffix("train.tar.gz") == ".tar.gz");
    BOOST_TEST(archive_suffix("train.tar") == ".tar");
    BOOST_TEST(archive_suffix("train.squashfs") == ".squashfs");
    BOOST_TEST(archive_suffix("train.gz").empty());
    BOOST_TEST(archive_suffix("train").empty());
}

BOOST_AUTO_TEST_CASE(globs_are_star_question_mark_and_brackets)
{
    BOOST_TEST(is_glob("/p/x/*.tar"));
    BOOST_TEST(is_glob("/p/x/a?.tar"));
    BOOST_TEST(is_glob("/p/x/a[12].tar"));
    BOOST_TEST(!is_glob("/p/x/a-1.tar"));
}

BOOST_AUTO_TEST_CASE(each_format_has_one_name_and_says_whether_it_comes_in_parts)
{
    std::vector<std::string> names;
    for (const auto& [name, format] : format_names()) {
        names.push_back(name);
        BOOST_TEST(to_string(format) == name);
        BOOST_TEST((traits_of(format).format == format));
    }
    BOOST_TEST(names == std::vector<std::string>({"auto", "dir", "file", "tar", "squashfs"}),
               boost::test_tools::per_element());
    BOOST_TEST(std::string(traits_of(Format::Tar).parts) == "tar shards");
    BOOST_TEST(std::string(traits_of(Format::Squashfs).parts) == "squashfs images");
    BOOST_TEST(comes_in_parts(Format::Tar));
    BOOST_TEST(!comes_in_parts(Format::Dir));
    BOOST_TEST(!comes_in_parts(Format::File));
    BOOST_TEST(!traits_of(Format::Tar).counted_as_one_file);  // its members are not known from a stat
    BOOST_TEST(traits_of(Format::Squashfs).counted_as_one_file);
}

BOOST_AUTO_TEST_SUITE_END()
