#include <boost/test/unit_test.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include "lib/error.hpp"
#include "stager/extract/parallel_extract.hpp"
#include "tests/unit/support/bombs.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/extract_fixtures.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
struct Member {
    std::string name;
    std::string content;  // a file; "/" alone: a directory
    time_t mtime = 1600000000;
};

void write_tar(const std::string& path, const std::vector<Member>& members)
{
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_open_filename(a, path.c_str());
    for (const Member& m : members) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, m.name.c_str());
        const bool dir = m.content == "/";
        archive_entry_set_filetype(e, dir ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, dir ? 0755 : 0644);
        archive_entry_set_size(e, dir ? 0 : static_cast<la_int64_t>(m.content.size()));
        archive_entry_set_mtime(e, m.mtime, 0);
        archive_write_header(a, e);
        if (!dir)
            archive_write_data(a, m.content.data(), m.content.size());
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

using test::content_of;
using test::mtime_of;
}  // namespace

BOOST_AUTO_TEST_SUITE(parallel_extract)

BOOST_AUTO_TEST_CASE(disjoint_shards_in_parallel_keep_directory_times)
{
    test::TempDir dir;
    std::vector<std::string> shards;
    for (int s = 0; s < 6; ++s) {
        std::vector<Member> members = {{"common", "/", 1500000000}};
        for (int f = 0; f < 50; ++f)
            members.push_back({"common/s" + std::to_string(s) + "-" + std::to_string(f), std::string(100 + f, 'x')});
        shards.push_back(dir / ("shard-" + std::to_string(s) + ".tar"));
        write_tar(shards.back(), members);
    }
    mkdir((dir / "out").c_str(), 0755);
    bool cleared = false;
    ExtractBudget unlimited;
    const ShardsResult result = extract_shards(
        shards, dir / "out", 4, [&] { cleared = true; }, unlimited);
    BOOST_TEST(!result.sequential_fallback);
    BOOST_TEST(!cleared);
    BOOST_TEST(result.stats.entries == 6u * 51u);
    BOOST_TEST(content_of(dir / "out/common/s5-49") == std::string(149, 'x'));
    // Written into by six threads, yet the directory ends with its archived time.
    BOOST_TEST(mtime_of(dir / "out/common") == 1500000000);
}

BOOST_AUTO_TEST_CASE(overlapping_shards_fall_back_to_tar_order)
{
    test::TempDir dir;
    const std::string a = dir / "a.tar", b = dir / "b.tar", c = dir / "c.tar";
    write_tar(a, {{"same.txt", "first"}, {"only-a", "a"}});
    write_tar(b, {{"other", "b"}});
    write_tar(c, {{"same.txt", "last"}});
    mkdir((dir / "out").c_str(), 0755);
    bool cleared = false;
    ExtractBudget unlimited;
    const ShardsResult result = extract_shards(
        {a, b, c}, dir / "out", 3, [&] { cleared = true; }, unlimited);
    BOOST_TEST(result.sequential_fallback);
    BOOST_TEST(cleared);
    BOOST_TEST(content_of(dir / "out/same.txt") == "last");
    BOOST_TEST(content_of(dir / "out/only-a") == "a");
}

BOOST_AUTO_TEST_CASE(a_failing_shard_fails_the_whole_extraction)
{
    test::TempDir dir;
    const std::string good = dir / "good.tar", bad = dir / "bad.tar";
    write_tar(good, {{"x", "1"}});
    write_tar(bad, {{"../escape", "2"}});
    mkdir((dir / "out").c_str(), 0755);
    ExtractBudget unlimited;
    const std::string message = test::error_of([&] {
        extract_shards(
            {good, bad}, dir / "out", 2, [] {}, unlimited);
    });
    BOOST_TEST(message.find("unsafe entry '../escape'") != std::string::npos);
    struct stat st {};
    BOOST_TEST(stat((dir / "escape").c_str(), &st) != 0);
}

// Four shards of 30 MiB each fit a limit of 80 MiB alone, not together.
BOOST_AUTO_TEST_CASE(shards_that_pass_the_limit_together_are_stopped_in_parallel_and_in_order)
{
    test::TempDir dir;
    std::vector<std::string> shards;
    for (int s = 0; s < 4; ++s) {
        shards.push_back(dir / ("shard-" + std::to_string(s) + ".tar.gz"));
        test::write_zeros_tgz(shards.back(), test::numbered("s" + std::to_string(s) + "-", 30), test::kMiB);
    }
    const std::string expected = "too many bytes while extracting " + dir.path() + "/shard-";
    for (const unsigned threads : {4u, 1u}) {
        const std::string out = dir / ("out" + std::to_string(threads));
        mkdir(out.c_str(), 0755);
        ExtractBudget budget(test::limits(80 * test::kMiB, std::nullopt));
        const std::string message = test::error_of([&] {
            extract_shards(
                shards, out, threads, [] {}, budget);
        });
        BOOST_TEST(message.compare(0, expected.size(), expected) == 0, message);
        BOOST_TEST(budget.bytes() <= 80 * test::kMiB);
    }
    ExtractBudget one(test::limits(80 * test::kMiB, std::nullopt));
    mkdir((dir / "alone").c_str(), 0755);
    BOOST_TEST(extract_shards(
                   {shards[0]}, dir / "alone", 4, [] {}, one)
                   .stats.bytes == 30 * test::kMiB);
}

// The fallback extracts into an emptied directory: what the parallel try
// counted is gone, and counting it twice would refuse a dataset that fits.
BOOST_AUTO_TEST_CASE(the_fallback_counts_from_zero_again)
{
    test::TempDir dir;
    const std::string a = dir / "a.tar", b = dir / "b.tar";
    write_tar(a, {{"same.txt", std::string(1000, 'a')}, {"only-a", std::string(1000, 'a')}});
    write_tar(b, {{"same.txt", std::string(1000, 'b')}});
    mkdir((dir / "out").c_str(), 0755);
    ExtractBudget budget(test::limits(3000, 3));
    const ShardsResult result = extract_shards(
        {a, b}, dir / "out", 2, [] {}, budget);
    BOOST_TEST(result.sequential_fallback);
    BOOST_TEST(budget.bytes() == 3000u);
    BOOST_TEST(content_of(dir / "out/same.txt") == std::string(1000, 'b'));
}

BOOST_AUTO_TEST_SUITE_END()
