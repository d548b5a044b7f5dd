// What a copy in a shared tier holds of a file cut off mid-way.  Whole
// files tell themselves by size and mtime (stager/copies/unfinished_copy);
// a file cut off part-way through does not: its pieces may have been
// written in any order, by several ranks, and a lost node's last writes
// may never have reached the file system.  So each rank logs every piece
// of a file written in several pieces once it is written, with its xxh3,
// in a log of its own per attempt (.pieces-NAME/ATTEMPT.RANK, appended
// by one write per record); the next attempt keeps of such a file the
// longest run from its first byte whose every piece is logged for the
// file as planned now (size and mtime) and reads back with its checksum.
//
// A record: size, mtime (s, ns), offset, length, xxh3 of the piece, the
// path's length and the path, then an xxh3 of all that (a record cut off
// by a kill, or anything else, ends the reading of its log).  Native byte
// order: written and read by the same binary on the same tier.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/sys/fd.hpp"
#include "stager/plan/plan.hpp"

namespace dlstage::stager {

struct LoggedPiece {
    std::uint64_t size = 0;  // the file's, as planned when the piece was written
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
    std::uint64_t offset = 0;
    std::uint32_t length = 0;
    std::uint64_t hash = 0;  // xxh3 of the piece's bytes
};

// What the log says of a piece just written (its checksum computed).
LoggedPiece logged_piece(const EntryList::Record& planned, std::uint64_t offset, const char* data,
                         std::uint32_t length);

// One record's bytes (the unit tests build logs with it).
std::string piece_record(std::string_view path, const LoggedPiece& piece);

// The records of one log in order, up to the first that is cut off or
// does not check.  Each with its path.
std::vector<std::pair<std::string, LoggedPiece>> parse_piece_log(std::string_view bytes);

// This rank's log for this attempt, in the pieces directory rank 0 made
// (start_piece_logs); note() is called from the writer's threads.
class PieceLog {
public:
    PieceLog(int job_dir, const std::string& pieces_dir, const std::string& shown, std::uint64_t attempt, int rank);
    // Throws Error when the record cannot be written.
    void note(const Plan& plan, std::size_t entry, std::uint64_t offset, const char* data, std::uint32_t length);

private:
    Fd fd_;
    std::string shown_;
    std::mutex mutex_;
};

// The logged pieces of the files `wanted` says yes to, by path, from
// every log in the pieces directory (none when it is missing or unreadable:
// the files are fetched whole).
using PiecesByPath = std::unordered_map<std::string, std::vector<LoggedPiece>>;
PiecesByPath read_piece_logs(int job_dir, const std::string& pieces_dir,
                             const std::function<bool(std::string_view)>& wanted);

// How many bytes from the start of `file` (open for reading, the copy's)
// the pieces vouch for: logged for the file as `planned` says it is now,
// run on from byte 0 without a gap, each read back whole with its
// checksum.  Less than the planned size: a file whose every byte is there
// still has its last byte written again, which finishes it.
std::uint64_t verified_prefix(int file, const EntryList::Record& planned, std::vector<LoggedPiece> pieces);

// Rank 0, before the first byte of an attempt: the pieces directory made;
// emptied first unless the attempt goes on from an unfinished copy (whose
// earlier attempts' logs still vouch for what it holds).
void start_piece_logs(int job_dir, const std::string& pieces_dir, const std::string& shown, bool going_on);

// Rank 0, with the resume record: the logs go.
void forget_piece_logs(int job_dir, const std::string& pieces_dir);

}  // namespace dlstage::stager
