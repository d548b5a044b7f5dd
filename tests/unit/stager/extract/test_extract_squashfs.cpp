#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/unit/support/bombs.hpp"
#include "tests/unit/support/deep_tree.hpp"
#include "tests/unit/support/extract_fixtures.hpp"
#include "tests/unit/support/in_child.hpp"

using namespace dlstage;
using namespace dlstage::test;

BOOST_AUTO_TEST_SUITE(extract)

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
        BOOST_TEST(s.error_extracting() ==
                   s.unsafe("data/passwd", "it is a symlink to '/etc/passwd', an absolute path"));
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

BOOST_AUTO_TEST_CASE(squashfs_tree_deeper_than_the_fd_limit_is_checked)
{
    SquashStaging s;
    const int levels = 300;
    make_deep_tree(s.src, levels, "d");
    s.make_image();
    // An fd limit far below the depth: holding one fd per level would fail.
    const std::string text = in_child([&] {
        const rlimit limit{64, 64};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
            return std::string("setrlimit failed");
        return "entries=" + std::to_string(extract_squashfs(s.image, s.dest).entries);
    });
    BOOST_TEST(text == "entries=" + std::to_string(levels + 1));  // the levels and the file
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

// Two images of one set: their trees merged, a directory both hold shared;
// a file both hold refused, naming the image, and nothing left behind.
BOOST_AUTO_TEST_CASE(an_image_set_is_unpacked_into_one_tree_with_disjoint_names)
{
    SquashStaging first, second;
    first.make_dir("a");
    first.make_file("a/1.bin", "one");
    first.make_file("top.txt", "top");
    first.make_image();
    second.make_dir("a");
    second.make_file("a/2.bin", "two");
    second.make_dir("b");
    second.make_file("b/3.bin", "three");
    second.make_image();
    const std::string scratch = first.tmp / "scratch";
    BOOST_REQUIRE(mkdir(scratch.c_str(), 0700) == 0);
    const ExtractStats stats = stager::extract_squashfs_set({first.image, second.image}, first.dest, scratch);
    BOOST_TEST(content_of(first.in_dest("a/1.bin")) == "one");
    BOOST_TEST(content_of(first.in_dest("a/2.bin")) == "two");
    BOOST_TEST(content_of(first.in_dest("b/3.bin")) == "three");
    BOOST_TEST(content_of(first.in_dest("top.txt")) == "top");
    BOOST_TEST(stats.bytes == 14u);
    BOOST_TEST(rmdir(scratch.c_str()) == 0);  // nothing of the unpacking left there

    SquashStaging clash;
    clash.make_dir("a");
    clash.make_file("a/1.bin", "again");
    clash.make_image();
    BOOST_REQUIRE(mkdir(scratch.c_str(), 0700) == 0);
    const std::string dest = first.tmp / "dest2";
    const std::string error = test::error_of([&] {
        stager::extract_squashfs_set({first.image, clash.image}, dest, scratch);
    });
    BOOST_TEST(error == clash.image + " holds 'a/1.bin', which an image before it in the set holds too: an image set "
                                      "must hold disjoint names");
    struct stat st {};
    BOOST_TEST(lstat(dest.c_str(), &st) != 0);
    BOOST_TEST(rmdir(scratch.c_str()) == 0);
}

// The stager is the user: a directory both images hold read-only (0555, as
// a packed tree may have it) is still merged into, and keeps its mode.
BOOST_AUTO_TEST_CASE(an_image_set_merges_into_read_only_directories_as_a_user)
{
    SquashStaging first, second;
    first.make_dir("ro");
    first.make_file("ro/1.bin", "one");
    BOOST_REQUIRE(chmod(first.at("ro").c_str(), 0555) == 0);
    first.make_image("-all-root");
    second.make_dir("ro");
    second.make_file("ro/2.bin", "two");
    BOOST_REQUIRE(chmod(second.at("ro").c_str(), 0555) == 0);
    second.make_image("-all-root");
    const std::string work = first.tmp / "work";
    BOOST_REQUIRE(mkdir(work.c_str(), 0755) == 0);
    BOOST_REQUIRE(mkdir((work + "/scratch").c_str(), 0700) == 0);
    for (const std::string& path : {first.tmp.path(), second.tmp.path(), first.image, second.image})
        BOOST_REQUIRE(chmod(path.c_str(), 0755) == 0);
    BOOST_REQUIRE(chown(work.c_str(), 65534, 65534) == 0);
    BOOST_REQUIRE(chown((work + "/scratch").c_str(), 65534, 65534) == 0);
    const std::string dest = work + "/dest";
    const std::string text = in_child(
        [&] {
            try {
                stager::extract_squashfs_set({first.image, second.image}, dest, work + "/scratch");
                return content_of(dest + "/ro/1.bin") + content_of(dest + "/ro/2.bin") + " " +
                       std::to_string(mode_of(dest + "/ro"));
            } catch (const Error& e) {
                return std::string(e.what());
            }
        },
        geteuid() == 0 ? 65534 : kSameUid, 65534);
    BOOST_TEST(text == "onetwo " + std::to_string(0555));
    chmod((dest + "/ro").c_str(), 0755);  // so that TempDir can clean up
}

BOOST_AUTO_TEST_SUITE_END()
