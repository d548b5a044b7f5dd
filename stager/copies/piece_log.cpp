#include "stager/copies/piece_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lib/error.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "lib/sys/write_all.hpp"

namespace dlstage::stager {

namespace {
// A log holds a record per MiB of the large files a rank wrote: some
// 100 MB for 1.5 PB.  Past this a log is not read (its files are fetched).
constexpr std::size_t kMostLogBytes = std::size_t{1} << 30;

template <typename T>
void put(std::string& out, const T& value)
{
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
bool take(std::string_view& in, T& value)
{
    if (in.size() < sizeof value)
        return false;
    std::memcpy(&value, in.data(), sizeof value);
    in.remove_prefix(sizeof value);
    return true;
}

bool same_file(const LoggedPiece& piece, const EntryList::Record& planned)
{
    return piece.size == planned.size && piece.mtime_sec == planned.mtime_sec && piece.mtime_nsec == planned.mtime_nsec;
}

// Whether the copy holds the piece's bytes as they were written.
bool reads_back(int file, const LoggedPiece& piece, std::vector<char>& buffer)
{
    buffer.resize(piece.length);
    std::uint64_t done = 0;
    while (done < piece.length) {
        const ssize_t n =
            ::pread(file, buffer.data() + done, piece.length - done, static_cast<off_t>(piece.offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;  // cut short: the file ends before it
        done += static_cast<std::uint64_t>(n);
    }
    return XXH3_64bits(buffer.data(), buffer.size()) == piece.hash;
}
}  // namespace

LoggedPiece logged_piece(const EntryList::Record& planned, std::uint64_t offset, const char* data, std::uint32_t length)
{
    LoggedPiece piece;
    piece.size = planned.size;
    piece.mtime_sec = planned.mtime_sec;
    piece.mtime_nsec = planned.mtime_nsec;
    piece.offset = offset;
    piece.length = length;
    piece.hash = XXH3_64bits(data, length);
    return piece;
}

std::string piece_record(std::string_view path, const LoggedPiece& piece)
{
    std::string out;
    put(out, piece.size);
    put(out, piece.mtime_sec);
    put(out, piece.mtime_nsec);
    put(out, piece.offset);
    put(out, piece.length);
    put(out, piece.hash);
    put(out, static_cast<std::uint32_t>(path.size()));
    out.append(path);
    put(out, static_cast<std::uint64_t>(XXH3_64bits(out.data(), out.size())));
    return out;
}

std::vector<std::pair<std::string, LoggedPiece>> parse_piece_log(std::string_view bytes)
{
    std::vector<std::pair<std::string, LoggedPiece>> records;
    while (!bytes.empty()) {
        const std::string_view start = bytes;
        LoggedPiece piece;
        std::uint32_t path_len = 0;
        if (!take(bytes, piece.size) || !take(bytes, piece.mtime_sec) || !take(bytes, piece.mtime_nsec) ||
            !take(bytes, piece.offset) || !take(bytes, piece.length) || !take(bytes, piece.hash) ||
            !take(bytes, path_len) || bytes.size() < path_len)
            break;
        const std::string_view path = bytes.substr(0, path_len);
        bytes.remove_prefix(path_len);
        std::uint64_t check = 0;
        const std::size_t body = start.size() - bytes.size();
        if (!take(bytes, check) || check != XXH3_64bits(start.data(), body))
            break;
        records.emplace_back(std::string(path), piece);
    }
    return records;
}

PieceLog::PieceLog(int job_dir, const std::string& pieces_dir, const std::string& shown, std::uint64_t attempt,
                   int rank)
    : shown_(shown + "/" + std::to_string(attempt) + "." + std::to_string(rank))
{
    const std::string name = pieces_dir + "/" + std::to_string(attempt) + "." + std::to_string(rank);
    fd_ = Fd(::openat(job_dir, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_.valid())
        throw_cannot("create", shown_, errno);
}

void PieceLog::note(const Plan& plan, std::size_t entry, std::uint64_t offset, const char* data, std::uint32_t length)
{
    const std::string record =
        piece_record(plan.entries.path(entry), logged_piece(plan.entries.record(entry), offset, data, length));
    // One write per record, one at a time: a kill cuts at most the last.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!write_all(fd_.get(), record))
        throw_cannot("write", shown_, errno);
}

PiecesByPath read_piece_logs(int job_dir, const std::string& pieces_dir,
                             const std::function<bool(std::string_view)>& wanted)
{
    PiecesByPath found;
    const Fd dir(::openat(job_dir, pieces_dir.c_str(), kDirFlags));
    if (!dir.valid())
        return found;
    DirStream logs(dir.get());
    if (!logs.valid())
        return found;
    while (const dirent* e = logs.next()) {
        const Fd log(::openat(dir.get(), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        struct stat st {};
        if (!log.valid() || ::fstat(log.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
            static_cast<std::uint64_t>(st.st_size) > kMostLogBytes)
            continue;
        std::string bytes;
        try {
            bytes = read_all(log.get(), kMostLogBytes, e->d_name);
        } catch (const Error&) {
            continue;  // says nothing: its files are fetched
        }
        for (auto& [path, piece] : parse_piece_log(bytes))
            if (wanted(path))
                found[path].push_back(piece);
    }
    return found;
}

std::uint64_t verified_prefix(int file, const EntryList::Record& planned, std::vector<LoggedPiece> pieces)
{
    pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                                [&](const LoggedPiece& p) { return !same_file(p, planned) || p.length == 0; }),
                 pieces.end());
    std::sort(pieces.begin(), pieces.end(), [](const LoggedPiece& a, const LoggedPiece& b) {
        return a.offset != b.offset ? a.offset < b.offset : a.length > b.length;
    });
    std::uint64_t held = 0;
    std::vector<char> buffer;
    for (const LoggedPiece& piece : pieces) {
        const std::uint64_t end = piece.offset + piece.length;
        if (piece.offset > held)
            break;  // a gap: what lies past it is fetched again
        if (end <= held)
            continue;  // covered already
        if (!reads_back(file, piece, buffer))
            break;
        held = end;
    }
    return planned.size == 0 ? 0 : std::min(held, planned.size - 1);
}

void start_piece_logs(int job_dir, const std::string& pieces_dir, const std::string& shown, bool going_on)
{
    struct stat st {};
    if (!going_on || (::fstatat(job_dir, pieces_dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)))
        forget_piece_logs(job_dir, pieces_dir);
    if (::mkdirat(job_dir, pieces_dir.c_str(), 0700) != 0 && (errno != EEXIST || !going_on))
        throw_cannot("create", shown, errno);
}

void forget_piece_logs(int job_dir, const std::string& pieces_dir)
{
    // Gone already, or not removable: the next attempt that goes on from a
    // copy checks every piece it reads back anyway.
    (void)remove_tree_at(job_dir, pieces_dir, pieces_dir);
}

}  // namespace dlstage::stager
