#include <boost/test/unit_test.hpp>

#include "policies/admission.hpp"

using namespace dlstage;
using dlstage::policy::admit;
using dlstage::policy::TierSpace;

namespace {
const std::uint64_t GiB = 1ull << 30;

Tier tier(const std::string& max_bytes, std::optional<std::uint64_t> max_inodes = std::nullopt)
{
    Tier t;
    t.name = "shm";
    t.path = PathTemplate::parse("/dev/shm/dlstage/%j");
    if (!max_bytes.empty())
        t.max_bytes = ByteLimit::parse(max_bytes);
    t.max_inodes = max_inodes;
    return t;
}

Dataset dataset(const std::string& source = "/p/imagenet")
{
    Dataset d;
    d.name = "imagenet";
    d.source = source;
    d.tiers = {"shm", "ssd"};
    return d;
}

SourceFacts facts(std::optional<std::uint64_t> bytes, std::optional<std::uint64_t> files)
{
    SourceFacts f;
    f.bytes = bytes;
    f.files = files;
    return f;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(absolute_limit)
{
    BOOST_TEST(admit(dataset(), tier("100G"), facts(100 * GiB, 1), {}).allowed);
    const auto verdict = admit(dataset(), tier("100G"), facts(100 * GiB + 1, 1), {});
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason ==
               "dataset 'imagenet' needs 100.0 GiB but tier 'shm' allows at most 100.0 GiB (max_bytes = 100.0 "
               "GiB); allowed tiers: ssd");
}

BOOST_AUTO_TEST_CASE(percent_limit_needs_the_file_system)
{
    TierSpace node;
    node.total_bytes = 64 * GiB;
    BOOST_TEST(admit(dataset(), tier("50%"), facts(40 * GiB, 1), {}).allowed);  // submit side: unknown
    const auto verdict = admit(dataset(), tier("50%"), facts(40 * GiB, 1), node);
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason.find("allows at most 32.0 GiB (max_bytes = 50%)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(free_space_and_inodes_on_the_node)
{
    TierSpace node;
    node.free_bytes = 10 * GiB;
    node.free_inodes = 500;
    BOOST_TEST(admit(dataset(), tier(""), facts(11 * GiB, 1), node).reason.find("has only 10.0 GiB free") !=
               std::string::npos);
    BOOST_TEST(admit(dataset(), tier(""), facts(GiB, 501), node).reason.find("only 500 free inodes") !=
               std::string::npos);
    BOOST_TEST(admit(dataset(), tier(""), facts(GiB, 500), node).allowed);
}

BOOST_AUTO_TEST_CASE(inode_limit_advises_an_image)
{
    const auto verdict = admit(dataset(), tier("", 1000000), facts(std::nullopt, 1281167), {});
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason ==
               "dataset 'imagenet' has 1281167 files but tier 'shm' allows at most 1000000 (max_inodes); stage a "
               "squashfs image or tar shards instead (built by 'dlstage pack')");
    // An image gets no advice to become an image.
    const auto image = admit(dataset("/p/x.sqfs"), tier("", 0), facts(1, 1), {});
    BOOST_TEST(image.reason.find("squashfs image or tar") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_sizes_pass)
{
    BOOST_TEST(admit(dataset(), tier("1K", 1), facts(std::nullopt, std::nullopt), {}).allowed);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(support)

BOOST_AUTO_TEST_CASE(node_tiers_take_every_mode_and_shared_tiers_all_but_mount)
{
    Dataset d = dataset("/p/x.sqfs");
    Tier t = tier("");
    for (const Mode mode : {Mode::Copy, Mode::Extract, Mode::Mount}) {
        d.mode = mode;
        BOOST_TEST(dlstage::policy::supported(d, t).allowed);
    }
    t.scope = Scope::Shared;
    for (const Mode mode : {Mode::Copy, Mode::Extract}) {
        d.mode = mode;
        BOOST_TEST(dlstage::policy::supported(d, t).allowed);
    }
    d.mode = Mode::Mount;
    const auto verdict = dlstage::policy::supported(d, t);
    BOOST_TEST(!verdict.allowed);
    BOOST_TEST(verdict.reason.find("a shared tier") != std::string::npos);
    BOOST_TEST(verdict.reason.find("node tier") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(extraction_budget)

using dlstage::policy::extraction_budget;
const std::uint64_t MiB = 1ull << 20;

BOOST_AUTO_TEST_CASE(max_bytes_bounds_what_extraction_writes_and_says_what_to_do)
{
    TierSpace node;
    node.total_bytes = 64 * GiB;
    node.free_bytes = 40 * GiB;
    const auto budget = extraction_budget(dataset("/p/x/bomb.tar.gz"), tier("80M"), facts(MiB, 1), node);
    BOOST_TEST(*budget.bytes.most == 80 * MiB);
    BOOST_TEST(budget.bytes.reason("/p/x/bomb.tar.gz") ==
               "dataset 'imagenet' expands to more than 80.0 MiB in tier 'shm' (max_bytes = 80.0 MiB) while "
               "extracting /p/x/bomb.tar.gz; check the archive, or ask your admins for a larger max_bytes; allowed "
               "tiers: ssd");
    // A share of the file system, resolved on the node.
    BOOST_TEST(*extraction_budget(dataset(), tier("50%"), facts(MiB, 1), node).bytes.most == 32 * GiB);
}

BOOST_AUTO_TEST_CASE(free_space_after_the_archives_is_tighter_than_the_tier)
{
    TierSpace node;
    node.free_bytes = 100 * MiB;  // measured before the archives arrived
    node.free_inodes = 500;
    const auto budget = extraction_budget(dataset(), tier("80M", 1000), facts(30 * MiB, 3), node);
    BOOST_TEST(*budget.bytes.most == 70 * MiB);
    BOOST_TEST(budget.bytes.reason("a.tar") ==
               "dataset 'imagenet' expands to more than 70.0 MiB in tier 'shm' (its free space on this node) while "
               "extracting a.tar; check the archive; allowed tiers: ssd");
    BOOST_TEST(*budget.entries.most == 497u);
    BOOST_TEST(budget.entries.words == "dataset 'imagenet' expands to more than 497 entries in tier 'shm' (its free "
                                       "inodes on this node)");
    // Archives that took all the room leave none, rather than wrapping around.
    BOOST_TEST(*extraction_budget(dataset(), tier(""), facts(200 * MiB, 600), node).bytes.most == 0u);
    BOOST_TEST(*extraction_budget(dataset(), tier(""), facts(200 * MiB, 600), node).entries.most == 0u);
}

BOOST_AUTO_TEST_CASE(max_inodes_bounds_entries_and_an_image_may_be_mounted_instead)
{
    TierSpace node;
    node.free_inodes = 1000000;
    const auto tar = extraction_budget(dataset("/p/x-*.tar"), tier("", 2000), facts(MiB, 4), node);
    BOOST_TEST(*tar.entries.most == 2000u);
    BOOST_TEST(tar.entries.reason("/p/x-1.tar") ==
               "dataset 'imagenet' expands to more than 2000 entries in tier 'shm' (max_inodes) while extracting "
               "/p/x-1.tar; check the archive, or ask your admins for a larger max_inodes; allowed tiers: ssd");
    const auto image = extraction_budget(dataset("/p/x.sqfs"), tier("", 2000), facts(MiB, 1), node);
    BOOST_TEST(image.entries.advice ==
               "check the archive, mount the image instead (mode = \"mount\"), or ask your admins for a larger "
               "max_inodes; allowed tiers: ssd");
}

BOOST_AUTO_TEST_CASE(a_share_of_the_budget_is_in_proportion_to_the_archives_bytes)
{
    using dlstage::policy::extraction_share;
    TierSpace node;
    node.free_inodes = 1000000;
    const auto whole = extraction_budget(dataset("/p/x-*.tar"), tier("80M", 2000), facts(MiB, 4), node);
    const auto quarter = extraction_share(whole, 1, 4);
    BOOST_TEST(*quarter.bytes.most == 20 * MiB);
    BOOST_TEST(*quarter.entries.most == 500u);
    BOOST_TEST(quarter.bytes.words == whole.bytes.words);
    BOOST_TEST(*extraction_share(whole, 1, 3).entries.most == 667u);  // rounded up: the parts cover the whole
    BOOST_TEST(*extraction_share(whole, 0, 4).bytes.most == 0u);      // no archives: nothing to write
    BOOST_TEST(*extraction_share(whole, 4, 4).bytes.most == 80 * MiB);
    // No bytes in all (empty archives): each may have it all, as one would.
    BOOST_TEST(*extraction_share(whole, 0, 0).entries.most == 2000u);
    // Large limits do not overflow.
    auto big = whole;
    big.bytes.most = UINT64_MAX;
    BOOST_TEST(*extraction_share(big, UINT64_MAX / 2, UINT64_MAX).bytes.most == UINT64_MAX / 2);
    BOOST_TEST(!extraction_share(extraction_budget(dataset(), tier(""), facts(MiB, 1), {}), 1, 2).bytes.most);
}

BOOST_AUTO_TEST_CASE(nothing_known_bounds_nothing)
{
    const auto budget = extraction_budget(dataset(), tier(""), facts(MiB, 1), {});
    BOOST_TEST(!budget.bytes.most);
    BOOST_TEST(!budget.entries.most);
    // A percentage without the file system's size is no limit either.
    BOOST_TEST(!extraction_budget(dataset(), tier("50%"), facts(MiB, 1), {}).bytes.most);
}

BOOST_AUTO_TEST_SUITE_END()
