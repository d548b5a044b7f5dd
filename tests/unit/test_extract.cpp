#include <boost/test/unit_test.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

#include "lib/error.hpp"
#include "stager/extract.hpp"
#include "tests/unit/bombs.hpp"
#include "tests/unit/error_of.hpp"
#include "tests/unit/tmpdir.hpp"

using namespace dlstage;
using stager::extract_squashfs;
using stager::extract_tar;
using stager::ExtractBudget;
using stager::ExtractStats;
using test::kMiB;

namespace {

constexpr time_t kMtime = 1500000000;  // 2017-07-14, any fixed past time
constexpr time_t kLaterMtime = 1600000000;

// One entry of an archive built for a test.
struct Entry {
    std::string path;
    mode_t type = AE_IFREG;
    mode_t perm = 0644;
    std::string data;
    std::string symlink;   // target, for AE_IFLNK
    std::string hardlink;  // target; makes the entry a hard link
    time_t mtime = kMtime;
};

Entry file(const std::string& path, const std::string& data, mode_t perm = 0644)
{
    return Entry{path, AE_IFREG, perm, data, "", "", kMtime};
}

Entry dir(const std::string& path, mode_t perm = 0755, time_t mtime = kMtime)
{
    return Entry{path, AE_IFDIR, perm, "", "", "", mtime};
}

Entry symlink_to(const std::string& path, const std::string& target)
{
    return Entry{path, AE_IFLNK, 0777, "", target, "", kMtime};
}

Entry hardlink_to(const std::string& path, const std::string& target)
{
    return Entry{path, AE_IFREG, 0644, "", "", target, kMtime};
}

Entry special(const std::string& path, mode_t type)
{
    return Entry{path, type, 0644, "", "", "", kMtime};
}

enum class Filter { none, gzip, zstd, xz, bzip2 };

void add_filter(archive* a, Filter filter)
{
    switch (filter) {
    case Filter::none:
        break;
    case Filter::gzip:
        BOOST_REQUIRE(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
        break;
    case Filter::zstd:
        BOOST_REQUIRE(archive_write_add_filter_zstd(a) == ARCHIVE_OK);
        break;
    case Filter::xz:
        BOOST_REQUIRE(archive_write_add_filter_xz(a) == ARCHIVE_OK);
        break;
    case Filter::bzip2:
        BOOST_REQUIRE(archive_write_add_filter_bzip2(a) == ARCHIVE_OK);
        break;
    }
}

void add_entry(archive* a, const Entry& e)
{
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_filetype(entry, e.type);
    archive_entry_set_perm(entry, e.perm);
    archive_entry_set_mtime(entry, e.mtime, 0);
    archive_entry_set_uid(entry, 4242);  // an owner that must not be applied
    archive_entry_set_gid(entry, 4242);
    archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
    if (!e.symlink.empty())
        archive_entry_set_symlink(entry, e.symlink.c_str());
    if (!e.hardlink.empty())
        archive_entry_set_hardlink(entry, e.hardlink.c_str());
    if (e.type == AE_IFCHR || e.type == AE_IFBLK)
        archive_entry_set_rdev(entry, makedev(1, 3));
    // ARCHIVE_WARN: a UTF-8 name in the C locale is stored as raw bytes.
    BOOST_REQUIRE(archive_write_header(a, entry) >= ARCHIVE_WARN);
    if (!e.data.empty())
        BOOST_REQUIRE(archive_write_data(a, e.data.data(), e.data.size()) == static_cast<la_ssize_t>(e.data.size()));
    archive_entry_free(entry);
}

void write_archive(const std::string& path, const std::vector<Entry>& entries, Filter filter = Filter::none,
                   int format = ARCHIVE_FORMAT_TAR_PAX_RESTRICTED)
{
    archive* a = archive_write_new();
    BOOST_REQUIRE(archive_write_set_format(a, format) == ARCHIVE_OK);
    add_filter(a, filter);
    BOOST_REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    for (const Entry& e : entries)
        add_entry(a, e);
    BOOST_REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
}

std::string content_of(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool exists(const std::string& path)
{
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

struct stat stat_of(const std::string& path)
{
    struct stat st{};
    BOOST_REQUIRE_MESSAGE(lstat(path.c_str(), &st) == 0, "missing " + path);
    return st;
}

mode_t mode_of(const std::string& path) { return stat_of(path).st_mode & 07777; }
time_t mtime_of(const std::string& path) { return stat_of(path).st_mtime; }

bool is_symlink(const std::string& path) { return S_ISLNK(stat_of(path).st_mode); }

std::string link_of(const std::string& path)
{
    char buf[4096];
    const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    BOOST_REQUIRE_MESSAGE(n >= 0, "not a symlink: " + path);
    return std::string(buf, static_cast<std::size_t>(n));
}

bool starts_with(const std::string& text, const std::string& prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

// A scratch directory with an archive path and an existing destination, as
// the stager has them.
struct Staging {
    test::TempDir tmp;
    std::string archive = tmp / "s0.tar";
    std::string dest = tmp / "dest";

    Staging() { BOOST_REQUIRE(mkdir(dest.c_str(), 0755) == 0); }

    std::string in_dest(const std::string& name) const { return dest + "/" + name; }

    // The message of extracting an archive made of entries, "" on success.
    std::string error_extracting(const std::vector<Entry>& entries)
    {
        write_archive(archive, entries);
        return test::error_of([&] { extract_tar(archive, dest); });
    }

    std::string unsafe(const std::string& entry, const std::string& why) const
    {
        return "unsafe entry '" + entry + "' in " + archive + ": " + why;
    }
};

// A directory tree for mksquashfs, and the image made of it.
struct SquashStaging {
    test::TempDir tmp;
    std::string src = tmp / "src";
    std::string image = tmp / "image.sqfs";
    std::string dest = tmp / "dest";

    SquashStaging() { BOOST_REQUIRE(mkdir(src.c_str(), 0755) == 0); }

    std::string at(const std::string& name) const { return src + "/" + name; }
    std::string in_dest(const std::string& name) const { return dest + "/" + name; }

    void make_dir(const std::string& name, mode_t mode = 0755) const
    {
        BOOST_REQUIRE(mkdir(at(name).c_str(), 0700) == 0);
        BOOST_REQUIRE(chmod(at(name).c_str(), mode) == 0);
    }
    void make_file(const std::string& name, const std::string& data, mode_t mode = 0644) const
    {
        std::ofstream(at(name), std::ios::binary) << data;
        BOOST_REQUIRE(chmod(at(name).c_str(), mode) == 0);
    }
    void make_symlink(const std::string& name, const std::string& target) const
    {
        BOOST_REQUIRE(::symlink(target.c_str(), at(name).c_str()) == 0);
    }
    void set_mtime(const std::string& name, time_t mtime) const
    {
        const struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
        BOOST_REQUIRE(utimensat(AT_FDCWD, at(name).c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
    }

    void make_image(const std::string& extra_options = "") const
    {
        const std::string command = "mksquashfs '" + src + "' '" + image + "' -quiet -no-progress -noappend " +
                                    extra_options + " >/dev/null 2>&1";
        BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
    }

    std::string error_extracting() const
    {
        return test::error_of([&] { extract_squashfs(image, dest); });
    }

    std::string unsafe(const std::string& entry, const std::string& why) const
    {
        return "unsafe entry '" + entry + "' in " + image + ": " + why;
    }
};

// Logical bytes of the files below dir and how many entries it holds.
struct Tally {
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0;
};

void tally(const std::string& dir, Tally& sum)
{
    DIR* d = opendir(dir.c_str());
    BOOST_REQUIRE_MESSAGE(d, "cannot read " + dir);
    while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..")
            continue;
        const struct stat st = stat_of(dir + "/" + name);
        ++sum.entries;
        if (S_ISREG(st.st_mode))
            sum.bytes += static_cast<std::uint64_t>(st.st_size);
        if (S_ISDIR(st.st_mode))
            tally(dir + "/" + name, sum);
    }
    closedir(d);
}

Tally tally_of(const std::string& dir)
{
    Tally sum;
    tally(dir, sum);
    return sum;
}

const std::string kUtf8Name = "a b \xc3\xbc\xc3\xa9.txt";  // "a b üé.txt"
const std::string kOnlyFiles = "; datasets hold only files, directories and links";

}  // namespace

BOOST_AUTO_TEST_SUITE(extract)

// --- tar: what must work ----------------------------------------------------

BOOST_AUTO_TEST_CASE(well_formed_tree_keeps_content_modes_mtimes_and_links)
{
    const std::vector<Entry> entries = {
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
        {"xz", Filter::xz, "\xfd" "7zXZ"},
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
    BOOST_TEST(s.error_extracting({dir("q/"), dir("q/r/"), symlink_to("q/r/s", "../.."),
                                   symlink_to("q/r/l", "s/../../..")}) ==
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
    BOOST_TEST(s.error_extracting({dir("a/"), dir("a/b/"), symlink_to("a/b/l", "../../x"), hardlink_to("h", "a/b/l")}) ==
               s.unsafe("h", "it is a hard link to 'a/b/l', " + why));
    BOOST_TEST(s.error_extracting({dir("d/"), hardlink_to("h", "d")}) == s.unsafe("h", "it is a hard link to 'd', " + why));
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
    std::vector<Entry> entries;
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

// --- squashfs ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(squashfs_tree_keeps_content_modes_and_links)
{
    SquashStaging s;
    s.make_dir("data", 0750);
    s.make_dir("data/empty dir", 0700);
    s.make_file("data/" + kUtf8Name, "alpha\n", 0640);
    s.make_file("data/empty", "", 0600);
    s.make_file("data/run.sh", "#!/bin/sh\n", 0755);
    BOOST_REQUIRE(link(s.at("data/run.sh").c_str(), s.at("data/same").c_str()) == 0);
    s.make_symlink("data/latest", kUtf8Name);
    s.make_symlink("data/up", "../data/empty dir");
    for (const char* name : {"data/empty", "data/run.sh", "data/empty dir", "data"})
        s.set_mtime(name, kMtime);
    s.make_image();

    const ExtractStats stats = extract_squashfs(s.image, s.dest);
    BOOST_TEST(stats.entries == 8u);
    BOOST_TEST(stats.bytes == 16u);  // run.sh once, though it has two names
    BOOST_TEST(stats.stripped == 0u);
    BOOST_TEST(content_of(s.in_dest("data/" + kUtf8Name)) == "alpha\n");
    BOOST_TEST(content_of(s.in_dest("data/empty")) == "");
    BOOST_TEST(content_of(s.in_dest("data/same")) == "#!/bin/sh\n");
    BOOST_TEST(mode_of(s.in_dest("data")) == 0750u);
    BOOST_TEST(mode_of(s.in_dest("data/empty dir")) == 0700u);
    BOOST_TEST(mode_of(s.in_dest("data/" + kUtf8Name)) == 0640u);
    BOOST_TEST(mode_of(s.in_dest("data/empty")) == 0600u);
    BOOST_TEST(mode_of(s.in_dest("data/run.sh")) == 0755u);
    for (const char* path : {"data", "data/empty dir", "data/empty", "data/run.sh"})
        BOOST_TEST(mtime_of(s.in_dest(path)) == kMtime, path);
    BOOST_TEST(link_of(s.in_dest("data/latest")) == kUtf8Name);
    BOOST_TEST(link_of(s.in_dest("data/up")) == "../data/empty dir");
}

BOOST_AUTO_TEST_CASE(squashfs_symlink_out_is_refused_and_dest_removed)
{
    {
        SquashStaging s;
        s.make_dir("data");
        s.make_file("data/f", "x");
        s.make_symlink("data/passwd", "/etc/passwd");
        s.make_image();
        BOOST_TEST(s.error_extracting() == s.unsafe("data/passwd", "it is a symlink to '/etc/passwd', an absolute path"));
        BOOST_TEST(!exists(s.dest));
    }
    {
        SquashStaging s;
        s.make_dir("data");
        s.make_symlink("data/out", "../../outside");
        s.make_image();
        BOOST_TEST(s.error_extracting() ==
                   s.unsafe("data/out", "it is a symlink to '../../outside', which leaves the destination"));
        BOOST_TEST(!exists(s.dest));
    }
}

BOOST_AUTO_TEST_CASE(squashfs_special_bits_are_stripped)
{
    SquashStaging s;
    s.make_dir("shared", 02775);
    s.make_file("shared/suid", "x", 04755);
    s.make_image();
    const ExtractStats stats = extract_squashfs(s.image, s.dest);
    // unsquashfs run by anyone but root drops the bits itself.
    BOOST_TEST(stats.stripped == (geteuid() == 0 ? 2u : 0u));
    BOOST_TEST(mode_of(s.in_dest("shared")) == 0775u);
    BOOST_TEST(mode_of(s.in_dest("shared/suid")) == 0755u);
}

BOOST_AUTO_TEST_CASE(squashfs_fifo_and_socket_are_refused_and_dest_removed)
{
    {
        SquashStaging s;
        s.make_dir("ro", 0755);
        s.make_file("ro/f", "x");
        BOOST_REQUIRE(chmod(s.at("ro").c_str(), 0555) == 0);  // removal must still get in
        BOOST_REQUIRE(mkfifo(s.at("pipe").c_str(), 0644) == 0);
        s.make_image();
        BOOST_TEST(s.error_extracting() == s.unsafe("pipe", "it is a fifo" + kOnlyFiles));
        BOOST_TEST(!exists(s.dest));
        chmod(s.at("ro").c_str(), 0755);  // so that TempDir can clean up
    }
    {
        SquashStaging s;
        const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        BOOST_REQUIRE(fd >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string path = s.at("sock");
        BOOST_REQUIRE(path.size() < sizeof addr.sun_path);
        path.copy(addr.sun_path, path.size());
        BOOST_REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        close(fd);
        s.make_image();
        BOOST_TEST(s.error_extracting() == s.unsafe("sock", "it is a socket" + kOnlyFiles));
        BOOST_TEST(!exists(s.dest));
    }
}

// mksquashfs's pseudo files make a device node without privileges.  As root,
// unsquashfs creates it and the check must refuse it; as anyone else,
// unsquashfs fails to create it.  Either way nothing may be left.
BOOST_AUTO_TEST_CASE(squashfs_device_is_refused_and_dest_removed)
{
    SquashStaging s;
    s.make_file("f", "x");
    s.make_image("-p 'null c 644 0 0 1 3'");
    const std::string message = s.error_extracting();
    if (geteuid() == 0)
        BOOST_TEST(message == s.unsafe("null", "it is a device node" + kOnlyFiles));
    else
        BOOST_TEST(starts_with(message, "cannot unpack " + s.image + ": unsquashfs exited with status"), message);
    BOOST_TEST(!exists(s.dest));
}

BOOST_AUTO_TEST_CASE(squashfs_needs_a_new_destination_in_an_existing_directory)
{
    SquashStaging s;
    s.make_file("f", "new");
    s.make_image();
    BOOST_REQUIRE(mkdir(s.dest.c_str(), 0755) == 0);
    s.tmp.write("dest/mine", "keep");
    BOOST_TEST(s.error_extracting() == "cannot unpack " + s.image + " into " + s.dest + ": it already exists");
    BOOST_TEST(content_of(s.in_dest("mine")) == "keep");  // not removed: it was not ours

    const std::string orphan = s.tmp / "no/such/dest";
    BOOST_TEST(test::error_of([&] { extract_squashfs(s.image, orphan); }) ==
               "cannot unpack " + s.image + " into " + orphan + ": No such file or directory");
}

BOOST_AUTO_TEST_CASE(squashfs_corrupt_image_reports_unsquashfs_message)
{
    SquashStaging s;
    s.tmp.write("image.sqfs", std::string(8192, 'g'));
    const std::string message = s.error_extracting();
    BOOST_TEST(starts_with(message, "cannot unpack " + s.image + ": unsquashfs exited with status 1: "), message);
    BOOST_TEST(message.find("superblock") != std::string::npos, message);
    BOOST_TEST(message.find('\n') == std::string::npos);
    BOOST_TEST(!exists(s.dest));
}

// --- squashfs: bounded by the tier's limits -----------------------------------

// A 300 MiB sparse file: mksquashfs stores its holes as nothing, so the
// image takes a few KiB.
BOOST_AUTO_TEST_CASE(squashfs_bomb_is_refused_before_unsquashfs_writes_anything)
{
    SquashStaging s;
    s.make_file("small", "x");
    s.make_file("zeros", "");
    BOOST_REQUIRE(truncate(s.at("zeros").c_str(), static_cast<off_t>(300 * kMiB)) == 0);
    s.make_image();
    BOOST_TEST(stat_of(s.image).st_size < 64 * 1024);
    ExtractBudget budget(test::limits(80 * kMiB, std::nullopt));
    BOOST_TEST(test::error_of([&] { extract_squashfs(s.image, s.dest, &budget); }) ==
               "too many bytes while extracting " + s.image + "; do less");
    BOOST_TEST(!exists(s.dest));
    BOOST_TEST(budget.entries() == 0u);  // the check of the result never ran: unsquashfs did not
}

BOOST_AUTO_TEST_CASE(squashfs_with_too_many_entries_is_refused_before_unpacking)
{
    SquashStaging s;
    for (const std::string& name : test::numbered("f", 20))
        s.make_file(name, "x");
    s.make_image();
    ExtractBudget budget(test::limits(std::nullopt, 20));  // 20 files and the root
    BOOST_TEST(test::error_of([&] { extract_squashfs(s.image, s.dest, &budget); }) ==
               "too many entries while extracting " + s.image + "; do fewer");
    BOOST_TEST(!exists(s.dest));
    ExtractBudget enough(test::limits(std::nullopt, 21));
    BOOST_TEST(extract_squashfs(s.image, s.dest, &enough).entries == 20u);
}

// What unsquashfs wrote is counted again, each file's data once.
BOOST_AUTO_TEST_CASE(squashfs_within_the_budget_is_counted_from_what_was_written)
{
    SquashStaging s;
    s.make_dir("d");
    s.make_file("d/a", "12345");
    s.make_file("b", "678");
    BOOST_REQUIRE(link(s.at("d/a").c_str(), s.at("same-as-a").c_str()) == 0);
    s.make_image();
    ExtractBudget budget(test::limits(13, 5));  // the listing counts a's data twice and the root
    const ExtractStats stats = extract_squashfs(s.image, s.dest, &budget);
    BOOST_TEST(budget.bytes() == 8u);
    BOOST_TEST(budget.entries() == 4u);
    BOOST_TEST(stats.entries == 4u);
    ExtractBudget tight(test::limits(12, 5));
    BOOST_TEST(test::error_of([&] { extract_squashfs(s.image, s.tmp / "dest2", &tight); }) ==
               "too many bytes while extracting " + s.image + "; do less");
}

// unsquashfs before 4.5.1 may write outside the destination: it never runs
// on an image.
BOOST_AUTO_TEST_CASE(squashfs_is_refused_with_an_unsquashfs_older_than_4_5_1)
{
    SquashStaging s;
    s.make_file("f", "x");
    s.make_image();
    const std::string bin = s.tmp / "bin";
    BOOST_REQUIRE(mkdir(bin.c_str(), 0755) == 0);
    const std::string ran = s.tmp / "ran-on-the-image";
    s.tmp.write("bin/unsquashfs", "#!/bin/sh\n[ \"$1\" = -version ] || touch '" + ran +
                                      "'\necho 'unsquashfs version 4.4 (2019/08/29)'\n");
    BOOST_REQUIRE(chmod((bin + "/unsquashfs").c_str(), 0755) == 0);
    const std::string path = getenv("PATH");
    setenv("PATH", (bin + ":" + path).c_str(), 1);
    const std::string message = s.error_extracting();
    setenv("PATH", path.c_str(), 1);
    BOOST_TEST(starts_with(message, "unsquashfs '4.4' can be made to write outside the destination"), message);
    BOOST_TEST(message.find("install squashfs-tools >= 4.5.1") != std::string::npos, message);
    BOOST_TEST(!exists(ran));
    BOOST_TEST(!exists(s.dest));
}

BOOST_AUTO_TEST_SUITE_END()
