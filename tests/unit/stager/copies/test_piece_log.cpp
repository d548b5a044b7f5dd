// What a copy holds of a file cut off mid-way (stager/copies/piece_log):
// the records each rank logs of the pieces it wrote, read back, and the
// prefix of a file that its logged pieces vouch for, piece by piece.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lib/sys/fd.hpp"
#include "stager/copies/piece_log.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using namespace dlstage::stager;

namespace {
// A 10,000-byte file as planned, and its bytes.
EntryList::Record planned_file()
{
    EntryList::Record e;
    e.size = 10000;
    e.mtime_sec = 1600000000;
    e.mtime_nsec = 5;
    return e;
}

std::string file_bytes()
{
    std::string s(10000, '\0');
    for (std::size_t i = 0; i < s.size(); ++i)
        s[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
    return s;
}

LoggedPiece piece_of(const std::string& bytes, std::uint64_t offset, std::uint32_t length)
{
    return logged_piece(planned_file(), offset, bytes.data() + offset, length);
}

// The copy's file holding the first `written` bytes of file_bytes().
Fd copy_holding(const test::TempDir& dir, std::size_t written)
{
    const std::string path = dir.write("copy.bin", file_bytes().substr(0, written));
    return Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
}
}  // namespace

BOOST_AUTO_TEST_SUITE(piece_log)

BOOST_AUTO_TEST_CASE(records_read_back_up_to_one_cut_off_or_foreign)
{
    const std::string bytes = file_bytes();
    const std::string a = piece_record("d/one.bin", piece_of(bytes, 0, 4096));
    const std::string b = piece_record("d/one.bin", piece_of(bytes, 4096, 4096));
    auto records = parse_piece_log(a + b);
    BOOST_REQUIRE(records.size() == 2u);
    BOOST_TEST(records[0].first == "d/one.bin");
    BOOST_TEST(records[1].second.offset == 4096u);
    BOOST_TEST(records[1].second.hash == XXH3_64bits(bytes.data() + 4096, 4096));
    // A kill mid-write leaves part of the last record: the rest counts.
    BOOST_TEST(parse_piece_log(a + b.substr(0, b.size() - 3)).size() == 1u);
    // A byte changed anywhere in a record ends the log there.
    std::string changed = a + b;
    changed[a.size() + 9] ^= 1;
    BOOST_TEST(parse_piece_log(changed).size() == 1u);
    BOOST_TEST(parse_piece_log(std::string(100, 'x')).empty());
}

BOOST_AUTO_TEST_CASE(a_log_is_read_from_every_attempt_and_rank_for_the_files_wanted)
{
    test::TempDir dir;
    const Fd top(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    start_piece_logs(top.get(), ".pieces-x", ".pieces-x", false);
    Plan plan;
    plan.entries.add(EntryType::File, "a.bin", 0644, 1600000000, 5, 10000);
    plan.entries.add(EntryType::File, "b.bin", 0644, 1600000000, 5, 10000);
    const std::string bytes = file_bytes();
    {
        PieceLog first(top.get(), ".pieces-x", ".pieces-x", 1, 0);
        first.note(plan, 0, 0, bytes.data(), 4096);
        first.note(plan, 1, 0, bytes.data(), 4096);
        PieceLog second(top.get(), ".pieces-x", ".pieces-x", 2, 1);
        second.note(plan, 0, 4096, bytes.data() + 4096, 4096);
    }
    PiecesByPath found = read_piece_logs(top.get(), ".pieces-x", [](std::string_view p) { return p == "a.bin"; });
    BOOST_TEST(found.size() == 1u);
    BOOST_TEST(found["a.bin"].size() == 2u);
    // Going on keeps the earlier attempts' logs; starting afresh drops them.
    start_piece_logs(top.get(), ".pieces-x", ".pieces-x", true);
    BOOST_TEST(read_piece_logs(top.get(), ".pieces-x", [](std::string_view) { return true; }).size() == 2u);
    start_piece_logs(top.get(), ".pieces-x", ".pieces-x", false);
    BOOST_TEST(read_piece_logs(top.get(), ".pieces-x", [](std::string_view) { return true; }).empty());
    forget_piece_logs(top.get(), ".pieces-x");
    struct stat st {};
    BOOST_TEST(::stat((dir / ".pieces-x").c_str(), &st) != 0);
}

BOOST_AUTO_TEST_CASE(the_prefix_held_runs_from_byte_zero_over_pieces_that_read_back)
{
    test::TempDir dir;
    const std::string bytes = file_bytes();
    const EntryList::Record planned = planned_file();
    // Written in any order, by several ranks: 0-4095, 8192-9999, 4096-8191.
    const std::vector<LoggedPiece> all = {piece_of(bytes, 8192, 1808), piece_of(bytes, 0, 4096),
                                          piece_of(bytes, 4096, 4096)};
    {
        const Fd copy = copy_holding(dir, 10000);
        // Every byte there: all but the last, which finishes the file.
        BOOST_TEST(verified_prefix(copy.get(), planned, all) == 9999u);
        // A gap: what lies past it is fetched again.
        BOOST_TEST(verified_prefix(copy.get(), planned, {all[0], all[1]}) == 4096u);
        BOOST_TEST(verified_prefix(copy.get(), planned, {all[0], all[2]}) == 0u);
    }
    {
        // A lost node's last write never reached the file system: the file
        // ends before a logged piece.
        const Fd copy = copy_holding(dir, 6000);
        BOOST_TEST(verified_prefix(copy.get(), planned, all) == 4096u);
    }
    {
        // Bytes that are not the ones logged (written over since).
        std::string other = bytes;
        other[5000] ^= 1;
        const Fd copy(::open(dir.write("other.bin", other).c_str(), O_RDONLY | O_CLOEXEC));
        BOOST_TEST(verified_prefix(copy.get(), planned, all) == 4096u);
    }
    {
        // Pieces of the file as it was before the source changed count for nothing.
        const Fd copy = copy_holding(dir, 10000);
        EntryList::Record now = planned;
        now.mtime_nsec = 6;
        BOOST_TEST(verified_prefix(copy.get(), now, all) == 0u);
        now = planned;
        now.size = 20000;
        BOOST_TEST(verified_prefix(copy.get(), now, all) == 0u);
    }
}

BOOST_AUTO_TEST_SUITE_END()
