#include <boost/test/unit_test.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <cstdlib>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

#include "lib/error.hpp"
#include "tests/unit/support/bombs.hpp"
#include "tests/unit/support/extract_fixtures.hpp"

using namespace dlstage;
using namespace dlstage::test;


BOOST_AUTO_TEST_SUITE(extract)

// --- tar: what must work ----------------------------------------------------

BOOST_AUTO_TEST_CASE(well_formed_tree_keeps_content_modes_mtimes_and_links)
{
    const std::vector<ArchiveEntry> entries = {
        dir("./"),
        dir("./data/"),
        dir("./data/train/", 0700),
        file("./data/train/" + kUtf8Name, "alpha\n", 0644),
        file("./data/train/empty", "", 0600),
        file("./data/train/run.sh", "#!/bin/sh\n", 0755),
        dir("./data/empty dir/", 0755),
        symlink_to("./data/latest", "train/" + kUtf8Name),
        symlink_to("./data/train/up", "../empty dir"),
        hardlink_to("./data/train/same", "./data/train/run.sh"),
    };
    const std::vector<std::pair<const char*, int>> formats = {{"pax", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED},
                                                              {"ustar", ARCHIVE_FORMAT_TAR_USTAR},
                                                              {"gnutar", ARCHIVE_FORMAT_TAR_GNUTAR}};
    for (const auto& [format_name, format] : formats) {
        BOOST_TEST_CONTEXT("format " << format_name)
        {
            Staging s;
            write_archive(s.archive, entries, Filter::none, format);
            const ExtractStats stats = extract_tar(s.archive, s.dest);

            BOOST_TEST(stats.entries == 9u);  // "./" is the destination itself
            BOOST_TEST(stats.bytes == 16u);   // the hard link carries no data
            BOOST_TEST(stats.stripped == 0u);

            BOOST_TEST(content_of(s.in_dest("data/train/" + kUtf8Name)) == "alpha\n");
            BOOST_TEST(content_of(s.in_dest("data/train/empty")) == "");
            BOOST_TEST(content_of(s.in_dest("data/train/run.sh")) == "#!/bin/sh\n");
            BOOST_TEST(mode_of(s.in_dest("data/train/" + kUtf8Name)) == 0644u);
            BOOST_TEST(mode_of(s.in_dest("data/train/empty")) == 0600u);
            BOOST_TEST(mode_of(s.in_dest("data/train/run.sh")) == 0755u);
            BOOST_TEST(mode_of(s.in_dest("data/train")) == 0700u);
            BOOST_TEST(mode_of(s.in_dest("data/empty dir")) == 0755u);
            BOOST_TEST(mode_of(s.dest) == 0755u);  // untouched by "./"

            // Directory mtimes survive the files written into them later.
            for (const char* path : {"data", "data/train", "data/empty dir", "data/train/empty", "data/train/run.sh"})
                BOOST_TEST(mtime_of(s.in_dest(path)) == kMtime, path);

            BOOST_TEST(link_of(s.in_dest("data/latest")) == "train/" + kUtf8Name);
            BOOST_TEST(link_of(s.in_dest("data/train/up")) == "../empty dir");
            BOOST_TEST(content_of(s.in_dest("data/latest")) == "alpha\n");
            BOOST_TEST(stat_of(s.in_dest("data/train/same")).st_ino == stat_of(s.in_dest("data/train/run.sh")).st_ino);

            // Owners come from the extracting user, never from the archive.
            BOOST_TEST(stat_of(s.in_dest("data/train/run.sh")).st_uid == geteuid());
        }
    }
}

BOOST_AUTO_TEST_CASE(compressed_and_plain_archives_all_extract)
{
    const std::vector<std::tuple<const char*, Filter, std::string>> filters = {
        {"plain", Filter::none, ""},
        {"gzip", Filter::gzip, "\x1f\x8b"},
        {"zstd", Filter::zstd, "\x28\xb5\x2f\xfd"},
        {"xz", Filter::xz,
         "\xfd"
         "7zXZ"},
        {"bzip2", Filter::bzip2, "BZh"},
    };
    for (const auto& [name, filter, magic] : filters) {
        BOOST_TEST_CONTEXT("filter " << name)
        {
            Staging s;
            const std::string data(100000, 'z');
            write_archive(s.archive, {dir("d/"), file("d/f", data)}, filter);
            // The archive really is compressed, so the reader must detect it.
            BOOST_TEST(content_of(s.archive).compare(0, magic.size(), magic) == 0);
            const ExtractStats stats = extract_tar(s.archive, s.dest);
            BOOST_TEST(content_of(s.in_dest("d/f")) == data);
            BOOST_TEST(stats.entries == 2u);
            BOOST_TEST(stats.bytes == data.size());
        }
    }
}

BOOST_AUTO_TEST_CASE(later_shards_overwrite_like_tar)
{
    Staging s;
    const std::string shard0 = s.tmp / "s0.tar.gz";
    const std::string shard1 = s.tmp / "s1.tar.zst";
    write_archive(shard0,
                  {dir("d/"), file("d/f", "old", 0644), file("d/keep", "keep"), file("x", "file"),
                   symlink_to("y", "d/keep"), file("z", "z0"), hardlink_to("z2", "z")},
                  Filter::gzip);
    write_archive(shard1,
                  {dir("d/", 0750, kLaterMtime), file("d/f", "new", 0600), symlink_to("x", "d/keep"),
                   file("y", "plain"), file("z", "z1")},
                  Filter::zstd);
    extract_tar(shard0, s.dest);
    extract_tar(shard1, s.dest);

    BOOST_TEST(content_of(s.in_dest("d/f")) == "new");
    BOOST_TEST(mode_of(s.in_dest("d/f")) == 0600u);
    BOOST_TEST(mode_of(s.in_dest("d")) == 0750u);
    BOOST_TEST(mtime_of(s.in_dest("d")) == kLaterMtime);  // set after d/f was rewritten
    BOOST_TEST(content_of(s.in_dest("d/keep")) == "keep");
    BOOST_TEST(link_of(s.in_dest("x")) == "d/keep");
    // The symlink y was replaced, not written through.
    BOOST_TEST(!is_symlink(s.in_dest("y")));
    BOOST_TEST(content_of(s.in_dest("y")) == "plain");
    BOOST_TEST(content_of(s.in_dest("d/keep")) == "keep");
    // Like tar, a rewritten file is a new file: its old hard link keeps the old data.
    BOOST_TEST(content_of(s.in_dest("z")) == "z1");
    BOOST_TEST(content_of(s.in_dest("z2")) == "z0");
}

BOOST_AUTO_TEST_CASE(special_bits_are_stripped_and_counted)
{
    Staging s;
    write_archive(s.archive, {file("suid", "x", 04755), file("sgid", "x", 02755), dir("sticky/", 01777),
                              dir("sgid-dir/", 02775), hardlink_to("suid-link", "suid")});
    const ExtractStats stats = extract_tar(s.archive, s.dest);
    BOOST_TEST(stats.stripped == 4u);
    BOOST_TEST(mode_of(s.in_dest("suid")) == 0755u);
    BOOST_TEST(mode_of(s.in_dest("sgid")) == 0755u);
    BOOST_TEST(mode_of(s.in_dest("sticky")) == 0777u);
    BOOST_TEST(mode_of(s.in_dest("sgid-dir")) == 02775u - 02000u);
}

// A tier may sit below a symlink (e.g. /var/run -> /run); libarchive's
// symlink guard must not take the destination's own path for an attack.
BOOST_AUTO_TEST_CASE(destination_reached_through_a_symlink_works)
{
    Staging s;
    const std::string via = s.tmp / "via";
    BOOST_REQUIRE(symlink(s.dest.c_str(), via.c_str()) == 0);
    write_archive(s.archive, {dir("d/"), file("d/f", "x")});
    BOOST_TEST(extract_tar(s.archive, via + "/").entries == 2u);
    BOOST_TEST(content_of(s.in_dest("d/f")) == "x");
}

// --- tar: hostile entries ---------------------------------------------------

BOOST_AUTO_TEST_CASE(dot_dot_path_is_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({file("../x", "evil")}) == s.unsafe("../x", "its path leaves the destination"));
    BOOST_TEST(!exists(s.tmp / "x"));
}

BOOST_AUTO_TEST_CASE(dot_dot_inside_a_path_is_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({dir("a/"), file("a/../../x", "evil")}) ==
               s.unsafe("a/../../x", "its path leaves the destination"));
    BOOST_TEST(!exists(s.tmp / "x"));

    BOOST_TEST(s.error_extracting({file("a/../b", "x")}) == s.unsafe("a/../b", "its path has a '..' component"));
    BOOST_TEST(!exists(s.in_dest("b")));
}

BOOST_AUTO_TEST_CASE(absolute_path_is_refused)
{
    Staging s;
    const std::string target = s.tmp / "abs";
    BOOST_TEST(s.error_extracting({file(target, "evil")}) == s.unsafe(target, "its path is absolute"));
    BOOST_TEST(!exists(target));
    BOOST_TEST(s.error_extracting({file("/etc/x", "evil")}) == s.unsafe("/etc/x", "its path is absolute"));
}

BOOST_AUTO_TEST_CASE(symlink_to_absolute_path_is_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({symlink_to("passwd", "/etc/passwd")}) ==
               s.unsafe("passwd", "it is a symlink to '/etc/passwd', an absolute path"));
    BOOST_TEST(!exists(s.in_dest("passwd")));
}

BOOST_AUTO_TEST_CASE(symlink_climbing_out_is_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({dir("a/"), symlink_to("a/l", "../../outside")}) ==
               s.unsafe("a/l", "it is a symlink to '../../outside', which leaves the destination"));
    BOOST_TEST(!exists(s.in_dest("a/l")));
    // The same climb from one level deeper stays inside.
    BOOST_TEST(s.error_extracting({dir("a/"), dir("a/b/"), symlink_to("a/b/l", "../../inside")}) == "");
}

// q/r/s -> ../.. leads to dest, so q/r/l -> s/../../.. would climb three
// levels above dest although it looks lexically like q.
BOOST_AUTO_TEST_CASE(symlink_climbing_after_a_name_is_refused)
{
    Staging s;
    BOOST_TEST(
        s.error_extracting({dir("q/"), dir("q/r/"), symlink_to("q/r/s", "../.."), symlink_to("q/r/l", "s/../../..")}) ==
        s.unsafe("q/r/l", "it is a symlink to 's/../../..', which has '..' after a name; "
                          "use a plain relative target"));
    BOOST_TEST(!exists(s.in_dest("q/r/l")));
}

BOOST_AUTO_TEST_CASE(writing_through_a_symlink_is_refused)
{
    Staging s;
    const std::string message = s.error_extracting({dir("sub/"), symlink_to("l", "sub"), file("l/f", "x")});
    BOOST_TEST(starts_with(message, "cannot extract 'l/f' from " + s.archive + ": "), message);
    BOOST_TEST(!exists(s.in_dest("sub/f")));
}

BOOST_AUTO_TEST_CASE(hardlink_out_of_destination_is_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({hardlink_to("h", "../x")}) ==
               s.unsafe("h", "it is a hard link to '../x', which leaves the destination"));
    BOOST_TEST(s.error_extracting({hardlink_to("h", "/etc/passwd")}) ==
               s.unsafe("h", "it is a hard link to '/etc/passwd', an absolute path"));
    BOOST_TEST(!exists(s.in_dest("h")));
}

BOOST_AUTO_TEST_CASE(hardlink_to_anything_but_an_extracted_file_is_refused)
{
    Staging s;
    const std::string why = "which is not a file extracted before it";
    BOOST_TEST(s.error_extracting({hardlink_to("h", "missing")}) ==
               s.unsafe("h", "it is a hard link to 'missing', " + why));
    // Present in dest from an earlier shard, but not extracted from this archive.
    s.tmp.write("dest/earlier", "x");
    BOOST_TEST(s.error_extracting({hardlink_to("h", "earlier")}) ==
               s.unsafe("h", "it is a hard link to 'earlier', " + why));
    // A hard link to a symlink would resolve from another directory.
    BOOST_TEST(
        s.error_extracting({dir("a/"), dir("a/b/"), symlink_to("a/b/l", "../../x"), hardlink_to("h", "a/b/l")}) ==
        s.unsafe("h", "it is a hard link to 'a/b/l', " + why));
    BOOST_TEST(s.error_extracting({dir("d/"), hardlink_to("h", "d")}) ==
               s.unsafe("h", "it is a hard link to 'd', " + why));
    BOOST_TEST(!exists(s.in_dest("h")));
}

BOOST_AUTO_TEST_CASE(devices_and_fifos_are_refused)
{
    Staging s;
    BOOST_TEST(s.error_extracting({dir("dev/"), special("dev/null", AE_IFCHR)}) ==
               s.unsafe("dev/null", "it is a device node" + kOnlyFiles));
    BOOST_TEST(!exists(s.in_dest("dev/null")));
    BOOST_TEST(s.error_extracting({special("sda", AE_IFBLK)}) == s.unsafe("sda", "it is a device node" + kOnlyFiles));
    BOOST_TEST(!exists(s.in_dest("sda")));
    BOOST_TEST(s.error_extracting({special("pipe", AE_IFIFO)}) == s.unsafe("pipe", "it is a fifo" + kOnlyFiles));
    BOOST_TEST(!exists(s.in_dest("pipe")));
}

BOOST_AUTO_TEST_CASE(control_bytes_in_names_cannot_break_the_message)
{
    Staging s;
    BOOST_TEST(s.error_extracting({file("../x\nforged line", "evil")}) ==
               s.unsafe("../x\\x0aforged line", "its path leaves the destination"));
}

// --- tar: broken input ------------------------------------------------------

BOOST_AUTO_TEST_CASE(truncated_archive_cannot_be_read)
{
    for (const Filter filter : {Filter::none, Filter::gzip}) {
        Staging s;
        std::string data;
        for (int i = 0; i < 20000; ++i)
            data += std::to_string(i * 7919 % 10007);
        write_archive(s.archive, {file("big", data), file("after", "x")}, filter);
        const std::string whole = content_of(s.archive);
        std::ofstream(s.archive, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() / 2);

        const std::string message = test::error_of([&] { extract_tar(s.archive, s.dest); });
        BOOST_TEST(starts_with(message, "cannot read " + s.archive + ": "), message);
        BOOST_TEST(message.size() > ("cannot read " + s.archive + ": ").size());
    }
}

BOOST_AUTO_TEST_CASE(non_archives_and_bad_destinations_are_errors)
{
    Staging s;
    const std::string junk = s.tmp.write("junk.tar", std::string(4096, 'j'));
    BOOST_TEST(starts_with(test::error_of([&] { extract_tar(junk, s.dest); }), "cannot read " + junk + ": "));
    const std::string missing = s.tmp / "missing.tar";
    BOOST_TEST(starts_with(test::error_of([&] { extract_tar(missing, s.dest); }), "cannot read " + missing + ": "));

    write_archive(s.archive, {file("f", "x")});
    const std::string not_dir = s.tmp.write("plain-file", "x");
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, not_dir); }) ==
               "cannot extract into " + not_dir + ": Not a directory");
    const std::string absent = s.tmp / "absent";
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, absent); }) ==
               "cannot extract into " + absent + ": No such file or directory");
}

// --- tar: bounded by the tier's limits ----------------------------------------

BOOST_AUTO_TEST_CASE(tar_bomb_stops_at_the_byte_limit_without_writing_past_it)
{
    Staging s;
    s.archive = s.tmp / "bomb.tar.gz";
    test::write_zeros_tgz(s.archive, test::numbered("zero", 200), kMiB);  // 200 MiB of zeros
    BOOST_TEST(stat_of(s.archive).st_size < 1024 * 1024);
    ExtractBudget budget(test::limits(80 * kMiB, std::nullopt));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &budget); }) ==
               "too many bytes while extracting " + s.archive + "; do less");
    BOOST_TEST(budget.bytes() == 80 * kMiB);
    const Tally written = tally_of(s.dest);
    BOOST_TEST(written.bytes == 80 * kMiB);
    BOOST_TEST(written.entries == 80u);  // the file that would pass the limit was not even created
}

BOOST_AUTO_TEST_CASE(one_huge_file_is_refused_before_any_of_it_is_written)
{
    Staging s;
    s.archive = s.tmp / "one.tar.gz";
    test::write_zeros_tgz(s.archive, {"huge"}, 300 * kMiB);
    ExtractBudget budget(test::limits(80 * kMiB, std::nullopt));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &budget); }) ==
               "too many bytes while extracting " + s.archive + "; do less");
    BOOST_TEST(budget.bytes() == 0u);
    BOOST_TEST(!exists(s.in_dest("huge")));
}

// A sparse file reads as its full size and may be copied as that much.
BOOST_AUTO_TEST_CASE(a_sparse_file_counts_its_size_not_its_data)
{
    Staging s;
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    BOOST_REQUIRE(archive_write_open_filename(a, s.archive.c_str()) == ARCHIVE_OK);
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, "sparse");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(100 * kMiB));
    archive_entry_sparse_add_entry(e, static_cast<la_int64_t>(100 * kMiB - 4096), 4096);
    BOOST_REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    const std::string data(4096, 'x');
    BOOST_REQUIRE(archive_write_data(a, data.data(), data.size()) == 4096);
    archive_entry_free(e);
    BOOST_REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
    BOOST_REQUIRE(stat_of(s.archive).st_size < 64 * 1024);

    ExtractBudget small(test::limits(99 * kMiB, std::nullopt));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &small); }) ==
               "too many bytes while extracting " + s.archive + "; do less");
    ExtractBudget enough(test::limits(100 * kMiB, std::nullopt));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &enough); }) == "");
    BOOST_TEST(stat_of(s.in_dest("sparse")).st_size == static_cast<off_t>(100 * kMiB));
}

BOOST_AUTO_TEST_CASE(too_many_entries_stop_at_the_entry_limit)
{
    Staging s;
    std::vector<ArchiveEntry> entries;
    for (const std::string& name : test::numbered("f", 100))
        entries.push_back(file(name, "x"));
    write_archive(s.archive, entries);
    ExtractBudget budget(test::limits(std::nullopt, 50));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &budget); }) ==
               "too many entries while extracting " + s.archive + "; do fewer");
    BOOST_TEST(budget.entries() == 50u);
    BOOST_TEST(tally_of(s.dest).entries == 50u);
}

// libarchive makes the missing parents of "a/b/c/d/f": five inodes from one
// entry, and a long path could make thousands.
BOOST_AUTO_TEST_CASE(parent_directories_an_entry_makes_are_counted_once)
{
    Staging s;
    write_archive(s.archive, {file("a/b/c/d/f", "x")});
    ExtractBudget four(test::limits(std::nullopt, 4));
    BOOST_TEST(test::error_of([&] { extract_tar(s.archive, s.dest, nullptr, &four); }) ==
               "too many entries while extracting " + s.archive + "; do fewer");
    BOOST_TEST(!exists(s.in_dest("a")));

    ExtractBudget budget(test::limits(std::nullopt, 8));
    extract_tar(s.archive, s.dest, nullptr, &budget);
    BOOST_TEST(budget.entries() == 5u);
    BOOST_TEST(tally_of(s.dest).entries == 5u);
    // A later archive's directories that are already there make nothing new.
    const std::string second = s.tmp / "s1.tar";
    write_archive(second, {dir("a"), dir("a/b"), file("a/b/g", "y"), file("a/b/c/e/h", "z")});
    extract_tar(second, s.dest, nullptr, &budget);
    BOOST_TEST(budget.entries() == 5u + 3u);  // g, e and h
    BOOST_TEST(tally_of(s.dest).entries == 8u);
}

BOOST_AUTO_TEST_SUITE_END()
