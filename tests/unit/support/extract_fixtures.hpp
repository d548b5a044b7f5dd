// Archives and images built for the extraction tests (test_extract_tar.cpp,
// test_extract_squashfs.cpp), and what the tests look at afterwards.
#pragma once

#include <boost/test/unit_test.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

#include "stager/extract/extract.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

namespace dlstage::test {

using stager::extract_squashfs;
using stager::extract_tar;
using stager::ExtractBudget;
using stager::ExtractStats;

inline constexpr time_t kMtime = 1500000000;  // 2017-07-14, any fixed past time
inline constexpr time_t kLaterMtime = 1600000000;

// One entry of an archive built for a test (not the plan's Entry).
struct ArchiveEntry {
    std::string path;
    mode_t type = AE_IFREG;
    mode_t perm = 0644;
    std::string data;
    std::string symlink;   // target, for AE_IFLNK
    std::string hardlink;  // target; makes the entry a hard link
    time_t mtime = kMtime;
};

inline ArchiveEntry file(const std::string& path, const std::string& data, mode_t perm = 0644)
{
    return ArchiveEntry{path, AE_IFREG, perm, data, "", "", kMtime};
}

inline ArchiveEntry dir(const std::string& path, mode_t perm = 0755, time_t mtime = kMtime)
{
    return ArchiveEntry{path, AE_IFDIR, perm, "", "", "", mtime};
}

inline ArchiveEntry symlink_to(const std::string& path, const std::string& target)
{
    return ArchiveEntry{path, AE_IFLNK, 0777, "", target, "", kMtime};
}

inline ArchiveEntry hardlink_to(const std::string& path, const std::string& target)
{
    return ArchiveEntry{path, AE_IFREG, 0644, "", "", target, kMtime};
}

inline ArchiveEntry special(const std::string& path, mode_t type)
{
    return ArchiveEntry{path, type, 0644, "", "", "", kMtime};
}

enum class Filter { none, gzip, zstd, xz, bzip2 };

inline void add_filter(archive* a, Filter filter)
{
    switch (filter) {
    case Filter::none: break;
    case Filter::gzip: BOOST_REQUIRE(archive_write_add_filter_gzip(a) == ARCHIVE_OK); break;
    case Filter::zstd: BOOST_REQUIRE(archive_write_add_filter_zstd(a) == ARCHIVE_OK); break;
    case Filter::xz: BOOST_REQUIRE(archive_write_add_filter_xz(a) == ARCHIVE_OK); break;
    case Filter::bzip2: BOOST_REQUIRE(archive_write_add_filter_bzip2(a) == ARCHIVE_OK); break;
    }
}

inline void add_entry(archive* a, const ArchiveEntry& e)
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

inline void write_archive(const std::string& path, const std::vector<ArchiveEntry>& entries,
                          Filter filter = Filter::none, int format = ARCHIVE_FORMAT_TAR_PAX_RESTRICTED)
{
    archive* a = archive_write_new();
    BOOST_REQUIRE(archive_write_set_format(a, format) == ARCHIVE_OK);
    add_filter(a, filter);
    BOOST_REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    for (const ArchiveEntry& e : entries)
        add_entry(a, e);
    BOOST_REQUIRE(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
}

inline struct stat stat_of(const std::string& path)
{
    struct stat st {};
    BOOST_REQUIRE_MESSAGE(lstat(path.c_str(), &st) == 0, "missing " + path);
    return st;
}

inline mode_t mode_of(const std::string& path)
{
    return stat_of(path).st_mode & 07777;
}
inline time_t mtime_of(const std::string& path)
{
    return stat_of(path).st_mtime;
}

inline bool is_symlink(const std::string& path)
{
    return S_ISLNK(stat_of(path).st_mode);
}

inline std::string link_of(const std::string& path)
{
    char buf[4096];
    const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    BOOST_REQUIRE_MESSAGE(n >= 0, "not a symlink: " + path);
    return std::string(buf, static_cast<std::size_t>(n));
}

inline bool starts_with(const std::string& text, const std::string& prefix)
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
    std::string error_extracting(const std::vector<ArchiveEntry>& entries)
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

inline void tally(const std::string& dir, Tally& sum)
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

inline Tally tally_of(const std::string& dir)
{
    Tally sum;
    tally(dir, sum);
    return sum;
}

inline const std::string kUtf8Name = "a b \xc3\xbc\xc3\xa9.txt";  // "a b üé.txt"
inline const std::string kOnlyFiles = "; datasets hold only files, directories and links";

}  // namespace dlstage::test
