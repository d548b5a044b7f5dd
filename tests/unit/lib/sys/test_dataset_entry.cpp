#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/sys/dataset_entry.hpp"
#include "lib/sys/fd.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/in_child.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;

namespace {
struct stat owned(uid_t uid, gid_t gid, mode_t mode)
{
    struct stat st {};
    st.st_uid = uid;
    st.st_gid = gid;
    st.st_mode = S_IFREG | mode;
    return st;
}

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
}  // namespace

BOOST_AUTO_TEST_SUITE(dataset_entry)

BOOST_AUTO_TEST_CASE(the_owner_reads_by_the_owner_bits_alone)
{
    const Caller alice{1001, 1001, {}};
    BOOST_TEST(mode_lets_read(owned(1001, 1001, 0400), alice));
    // The others' bits do not help an owner the owner's bits refuse.
    BOOST_TEST(!mode_lets_read(owned(1001, 1001, 0044), alice));
}

BOOST_AUTO_TEST_CASE(a_member_reads_by_the_group_bits_whether_primary_or_supplementary)
{
    const Caller bob{1002, 1002, {1004, 2000}};
    BOOST_TEST(mode_lets_read(owned(1001, 1002, 0040), bob));
    BOOST_TEST(mode_lets_read(owned(1001, 2000, 0040), bob));
    BOOST_TEST(!mode_lets_read(owned(1001, 1004, 0404), bob));
}

BOOST_AUTO_TEST_CASE(everyone_else_reads_by_the_others_bits)
{
    const Caller carol{1003, 1003, {}};
    BOOST_TEST(mode_lets_read(owned(1001, 1001, 0004), carol));
    BOOST_TEST(!mode_lets_read(owned(1001, 1001, 0440), carol));
}

// A file only others may read, owned by the user that checks it: the
// kernel refuses its owner.  Asked with a trusted reader whose mode says
// yes, the kernel is not asked at all; with the real caller, whose mode
// says no, it is, and refuses.
BOOST_AUTO_TEST_CASE(the_kernel_is_asked_only_when_the_mode_does_not_say_yes)
{
    test::TempDir dir;
    chmod(dir.path().c_str(), 0755);
    dir.write("others-only", "x");
    const bool root = geteuid() == 0;
    if (root)
        BOOST_REQUIRE(chown((dir / "others-only").c_str(), kNobody, kNogroup) == 0);
    chmod((dir / "others-only").c_str(), 0004);
    const std::string said = test::in_child(
        [&] {
            const Fd at(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            struct stat st {};
            fstatat(at.get(), "others-only", &st, AT_SYMLINK_NOFOLLOW);
            const std::string path = "others-only";
            const FoundEntry found{at.get(), "others-only", path, st};
            const Caller someone_else{st.st_uid + 1, st.st_gid + 1, {}};
            const Caller me = Caller::current();
            return "asked: " + test::error_of([&] { check_dataset_entry(found, dir.path()); }) + "\nmode says yes: " +
                   test::error_of([&] { check_dataset_entry(found, dir.path(), &someone_else); }) +
                   "\nmode says no: " + test::error_of([&] { check_dataset_entry(found, dir.path(), &me); });
        },
        root ? kNobody : test::kSameUid, kNogroup);
    const std::string refused = "cannot read " + dir.path() + "/others-only: Permission denied";
    BOOST_TEST(said == "asked: " + refused + "\nmode says yes: \nmode says no: " + refused);
}

BOOST_AUTO_TEST_SUITE_END()
