// find_copies (dlstage status --dataset NAME) as root reads every user's
// record in a shared tier: the users' files, in the users' directories.
// A user must not be able to make root hang, follow a link, read through a
// mount, or show another user's copy as theirs; a squatted tier root holds
// whatever its owner planted and is not listed.
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/safe_fs_fixtures.hpp"
#include "tests/unit/support/stopped_fuse.hpp"
#include "tests/unit/support/tmpdir.hpp"
#include "tier/kept_copies.hpp"

using namespace dlstage;
using dlstage::test::kOtherGid;
using dlstage::test::kOtherUid;

namespace {

struct Scratch {
    test::TempDir dir;
    std::string root = dir / "scratch";
    Config config;

    Scratch()
    {
        test::make_dir(root, 0755);
        config = parse_config("[site]\nstate_dir = \"" + (dir / "state") + "\"\n[tiers.scratch]\npath = \"" + root +
                                  "/%u\"\nscope = \"shared\"\ncleanup = \"keep\"\n[datasets.tree]\nsource = "
                                  "\"/p/tree\"\ntiers = [\"scratch\"]\n",
                              "t.toml");
    }

    static std::string record_text(const std::string& path)
    {
        CopyRecord r;
        r.ready = ReadyMarker{"tree", "scratch", "/p/tree", path, 10, 1, {}};
        r.identity = "0123456789abcdef";
        r.made = r.last_use = r.oldest = 1700000000;
        r.uses = 1;
        std::ostringstream out;
        out << copy_record_table(r);
        return out.str();
    }

    // A user's directory with a record, both theirs.
    std::string user(const std::string& name, uid_t uid = kOtherUid) const
    {
        const std::string home = root + "/" + name;
        test::make_dir(home, 0700);
        BOOST_REQUIRE(::chown(home.c_str(), uid, kOtherGid) == 0);
        return home;
    }
    std::string record(const std::string& home, uid_t uid = kOtherUid) const
    {
        const std::string path = home + "/.ready-tree.toml";
        test::make_file(path, record_text(home + "/tree"));
        BOOST_REQUIRE(::lchown(path.c_str(), uid, kOtherGid) == 0);
        return path;
    }
};

std::string listing(const std::vector<FoundCopy>& copies)
{
    std::string text;
    for (const FoundCopy& c : copies)
        text += c.user + ": " + (c.record ? "path " + c.record->ready.path : "problem " + c.problem) + "\n";
    return text;
}

bool says(const std::string& text, const std::string& what)
{
    return text.find(what) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(copy_record)

BOOST_AUTO_TEST_CASE(root_lists_each_users_record_and_refuses_fifos_links_and_planted_records)
{
    if (!test::is_root())
        return;
    Scratch s;
    s.record(s.user("alice"));
    const std::string bob = s.user("bob");
    BOOST_REQUIRE(::mkfifo((bob + "/.ready-tree.toml").c_str(), 0600) == 0);  // would block a reader
    const std::string carol = s.user("carol");
    BOOST_REQUIRE(::symlink((s.root + "/alice/.ready-tree.toml").c_str(), (carol + "/.ready-tree.toml").c_str()) == 0);
    // A record in dave's directory that dave did not write.
    s.record(s.user("dave"), 4242);
    const std::string erin = s.user("erin");
    test::make_file(erin + "/.ready-tree.toml", std::string(2u << 20, '#'));
    const std::string text = test::in_child([&] {
        ::alarm(10);
        return listing(find_copies(s.config, "tree", "root", true));
    });
    BOOST_TEST_MESSAGE(text);
    BOOST_TEST(says(text, "alice: path " + s.root + "/alice/tree"));
    BOOST_TEST(says(text, "bob: problem " + bob + "/.ready-tree.toml is not a regular file"));
    BOOST_TEST(says(text, "carol: problem "));
    BOOST_TEST(!says(text, "carol: path"));
    BOOST_TEST(says(text, "dave: problem " + s.root + "/dave/.ready-tree.toml belongs to uid 4242"));
    BOOST_TEST(says(text, "erin: problem "));
}

BOOST_AUTO_TEST_CASE(a_squatted_tier_root_is_not_listed)
{
    if (!test::is_root())
        return;
    Scratch s;
    // The tier root made by a user before the admin (no tmpfiles.d entry):
    // everything in it is that user's to plant.
    BOOST_REQUIRE(::chown(s.root.c_str(), kOtherUid, kOtherGid) == 0);
    s.record(s.user("alice"));
    const std::string text = listing(find_copies(s.config, "tree", "root", true));
    BOOST_TEST_MESSAGE(text);
    BOOST_TEST(!says(text, "alice: path"));
    BOOST_TEST(says(text, "belongs to uid " + std::to_string(kOtherUid)));
}

BOOST_AUTO_TEST_CASE(a_users_stopped_fuse_mount_on_their_directory_does_not_hang_root)
{
    if (test::cannot_mount())
        return;
    Scratch s;
    s.record(s.user("alice"));
    const std::string mallory = s.user("mallory");
    test::make_dir(s.dir / "content");
    test::make_file(s.dir / "content/.ready-tree.toml", Scratch::record_text("/forged"));
    const std::string text = test::with_stopped_fuse(s.dir / "content", s.dir / "image.sqfs", mallory, [&] {
        ::alarm(10);  // a hang ends the child: "ended abnormally"
        return listing(find_copies(s.config, "tree", "root", true));
    });
    if (test::skipped(text))
        return;
    BOOST_TEST_MESSAGE(text);
    BOOST_TEST(says(text, "alice: path " + s.root + "/alice/tree"));
    BOOST_TEST(says(text, "mallory: problem " + mallory + " is a mount point; not entered"));
    BOOST_TEST(!says(text, "/forged"));
}

// The stager and submit read the user's own record by path: one another
// user put in the directory (open to them for a while) is not the user's.
BOOST_AUTO_TEST_CASE(a_record_someone_else_owns_is_not_the_readers)
{
    if (!test::is_root())
        return;
    Scratch s;
    const std::string path = s.record(s.user("alice"));
    const std::string error = test::error_of([&] { read_copy_record(path); });  // root reads uid 12345's
    BOOST_TEST(error.find("belongs to uid 12345, not to you") != std::string::npos, error);
}

BOOST_AUTO_TEST_SUITE_END()
