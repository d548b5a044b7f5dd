#include <boost/test/unit_test.hpp>

#include <string>

#include "stager/extract/squashfs_listing.hpp"

using dlstage::stager::ListingTotals;
using dlstage::stager::superblock_inodes;

namespace {
// As unsquashfs 4.5.1 -lln prints them.
const std::string kListing = "drwxr-xr-x 0/0                      76 2024-05-21 10:00 squashfs-root\n"
                             "drwxr-xr-x 0/0                     128 2024-05-21 10:00 squashfs-root/d\n"
                             "-rw-r--r-- 1000/1000           1048576 2024-05-21 10:00 squashfs-root/d/f\n"
                             "-rwsr-xr-x 0/0                       5 2024-05-21 10:00 squashfs-root/d/tool\n"
                             "lrwxrwxrwx 0/0                       8 2024-05-21 10:00 squashfs-root/link -> zero.bin\n"
                             "crw-r--r-- 0/0                   1,  3 2024-05-21 10:00 squashfs-root/null\n"
                             "-rw-r--r-- 0/0               314572800 2024-05-21 10:00 squashfs-root/zero.bin\n";

ListingTotals totals_of(const std::string& listing, std::size_t chunk)
{
    ListingTotals totals;
    for (std::size_t at = 0; at < listing.size(); at += chunk)
        totals.feed(std::string_view(listing).substr(at, chunk));
    totals.finish();
    return totals;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(squashfs_listing)

BOOST_AUTO_TEST_CASE(counts_every_entry_and_the_files_sizes_in_chunks_of_any_size)
{
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, kListing.size()}) {
        const ListingTotals totals = totals_of(kListing, chunk);
        BOOST_TEST(totals.entries() == 7u);
        BOOST_TEST(totals.file_bytes() == 1048576u + 5u + 314572800u);
        BOOST_TEST(totals.unreadable_line().empty());
    }
    // The last line without its newline counts too.
    BOOST_TEST(totals_of(kListing.substr(0, kListing.size() - 1), 5).file_bytes() == 1048576u + 5u + 314572800u);
}

BOOST_AUTO_TEST_CASE(names_with_newlines_can_only_add)
{
    // A name ending in a newline and a made-up entry, one with a very long
    // second line, and one that only looks like a line start.
    const std::string listing = "-rw-r--r-- 0/0                       1 2024-05-21 10:00 squashfs-root/evil\n"
                                "-rw-r--r-- 0/0 999 2020-01-01 00:00 fake\n"
                                "-rw-r--r-- 0/0                       2 2024-05-21 10:00 squashfs-root/long\n" +
                                std::string(100000, 'x') + "\n" +
                                "-rw-r--r-- 0/0                       4 2024-05-21 10:00 squashfs-root/x\ndrwx------\n";
    const ListingTotals totals = totals_of(listing, 4096);
    BOOST_TEST(totals.entries() == 4u);
    BOOST_TEST(totals.file_bytes() == 1u + 999u + 2u + 4u);
    BOOST_TEST(totals.unreadable_line().empty());
}

BOOST_AUTO_TEST_CASE(a_file_line_without_a_readable_size_is_reported_not_skipped)
{
    for (const std::string line :
         {"-rw-r--r-- 0/0 lots 2024-05-21 10:00 squashfs-root/f",
          "-rw-r--r-- 0/0 99999999999999999999999 2024-05-21 10:00 squashfs-root/f", "-rw-r--r-- 0/0"}) {
        const ListingTotals totals = totals_of(kListing + line + "\n", 4096);
        BOOST_TEST(totals.unreadable_line() == line);
    }
    // Sizes that add up past 2^64 stay at the top instead of wrapping.
    const std::string huge = "-rw-r--r-- 0/0 18446744073709551615 2024-05-21 10:00 squashfs-root/f\n";
    BOOST_TEST(totals_of(huge + huge, 4096).file_bytes() == 18446744073709551615u);
}

BOOST_AUTO_TEST_CASE(superblock_inode_count)
{
    std::string head(96, '\0');
    head.replace(0, 4, "hsqs");
    head[4] = '\x07';
    head[5] = '\x01';   // 263 inodes
    head[28] = '\x04';  // version 4.0
    BOOST_TEST(*superblock_inodes(head) == 263u);
    BOOST_TEST(!superblock_inodes(head.substr(0, 95)));
    std::string v3 = head;
    v3[28] = '\x03';
    BOOST_TEST(!superblock_inodes(v3));
    std::string other = head;
    other[0] = 'x';
    BOOST_TEST(!superblock_inodes(other));
}

BOOST_AUTO_TEST_SUITE_END()
