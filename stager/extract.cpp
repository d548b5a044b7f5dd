#include "stager/extract.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <poll.h>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/unsquashfs.hpp"
#include "stager/entry_rules.hpp"
#include "stager/squashfs_listing.hpp"

namespace dlstage::stager {

// The tar reader reports entry types as AE_IF*; the squashfs check sees
// st_mode.  One type check serves both because the values are the same.
static_assert(AE_IFREG == S_IFREG && AE_IFDIR == S_IFDIR && AE_IFLNK == S_IFLNK && AE_IFCHR == S_IFCHR &&
              AE_IFBLK == S_IFBLK && AE_IFIFO == S_IFIFO && AE_IFSOCK == S_IFSOCK);

namespace {

constexpr mode_t kSpecialBits = S_ISUID | S_ISGID | S_ISVTX;

std::string join_path(const std::string& dir, const std::string& name)
{
    if (name.empty())
        return dir;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// --- tar ----------------------------------------------------------------------

struct ReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
    void operator()(archive* a) const { archive_write_free(a); }
};
using Reader = std::unique_ptr<archive, ReadFree>;
using Writer = std::unique_ptr<archive, WriteFree>;

std::string message_of(archive* a)
{
    const char* text = archive_error_string(a);
    return text ? text : "unknown error";
}

[[noreturn]] void cannot_read(archive* in, const std::string& source)
{
    throw Error("cannot read " + source + ": " + message_of(in));
}

[[noreturn]] void cannot_extract(archive* out, const std::string& entry, const std::string& source)
{
    throw Error("cannot extract " + quoted(entry) + " from " + source + ": " + message_of(out));
}

Reader open_archive(const std::string& path)
{
    Reader in(archive_read_new());
    if (!in)
        throw Error("cannot read " + path + ": out of memory");
    archive_read_support_filter_all(in.get());
    archive_read_support_format_tar(in.get());  // ustar, pax, gnu and v7
    // Shards live on a parallel file system, which wants large reads.
    if (archive_read_open_filename(in.get(), path.c_str(), 1 << 20) != ARCHIVE_OK)
        cannot_read(in.get(), path);
    return in;
}

// Our own checks come first so that errors name the entry; these flags are
// the second line of defence.  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS cannot
// be among them: libarchive has no "relative to this directory" mode and we
// may not chdir, so every path it sees is the absolute destination plus the
// checked entry name.  No ARCHIVE_EXTRACT_OWNER and no name lookups: files
// belong to the job's user, whatever the archive says.
Writer open_disk_writer()
{
    Writer out(archive_write_disk_new());
    if (!out)
        throw Error("cannot extract: out of memory");
    archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                                                  ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                  ARCHIVE_EXTRACT_SECURE_NODOTDOT);
    return out;
}

// The destination with symlinks resolved: ARCHIVE_EXTRACT_SECURE_SYMLINKS
// refuses to write through any symlink on the path, the destination's own
// included (e.g. a tier below /var/run).
std::string canonical_directory(const std::string& dest)
{
    // Relative: below the working directory, which the stager made the job
    // directory it opened and checked; resolving it to a path again would
    // look it up anew.  The stager created it, so it is no symlink.
    if (!dest.empty() && dest.front() != '/') {
        struct stat st;
        if (lstat(dest.c_str(), &st) != 0)
            throw_cannot("extract into", dest, errno);
        if (!S_ISDIR(st.st_mode))
            throw_cannot("extract into", dest, ENOTDIR);
        return dest;
    }
    char buf[PATH_MAX];
    if (!realpath(dest.c_str(), buf))
        throw_cannot("extract into", dest, errno);
    struct stat st;
    if (stat(buf, &st) != 0)
        throw_cannot("extract into", dest, errno);
    if (!S_ISDIR(st.st_mode))
        throw_cannot("extract into", dest, ENOTDIR);
    return buf;
}

class TarExtraction {
public:
    TarExtraction(const std::string& archive, const std::string& dest, ShardOutcome* outcome, ExtractBudget* budget)
        : source_(archive), dest_(canonical_directory(dest)), in_(open_archive(archive)), out_(open_disk_writer()),
          outcome_(outcome), budget_(budget ? *budget : unlimited_)
    {
    }

    ExtractStats run()
    {
        archive_entry* entry = nullptr;
        for (;;) {
            const int r = archive_read_next_header(in_.get(), &entry);
            if (r == ARCHIVE_EOF)
                break;
            // ARCHIVE_WARN is fine: e.g. a UTF-8 name in the C locale, which
            // comes through as its raw bytes.
            if (r < ARCHIVE_WARN)
                cannot_read(in_.get(), source_);
            extract(entry);
        }
        // libarchive sets the modes and times of the directories it created
        // here, after everything inside them was written.
        if (archive_write_close(out_.get()) != ARCHIVE_OK)
            throw Error("cannot finish extracting " + source_ + " into " + dest_ + ": " + message_of(out_.get()));
        if (outcome_)
            hand_over(*outcome_);
        else
            restore_directory_times();
        return stats_;
    }

private:
    void extract(archive_entry* entry)
    {
        const char* raw = archive_entry_pathname(entry);
        const std::string name = raw ? raw : "";
        const std::string path = checked_path(name);
        if (path.empty())
            return;  // "./": the destination itself, whose mode is the caller's
        const bool is_file = check_kind(entry, name, path);
        strip_special_bits(entry, archive_entry_hardlink(entry) != nullptr);
        count_entries(entry, path);
        const std::uint64_t counted = is_file ? count_declared_size(entry) : 0;

        archive_entry_set_pathname(entry, join_path(dest_, path).c_str());
        if (const char* link = archive_entry_hardlink(entry))
            archive_entry_set_hardlink(entry, join_path(dest_, normalized_link(link)).c_str());

        if (archive_write_header(out_.get(), entry) != ARCHIVE_OK)
            cannot_extract(out_.get(), name, source_);
        copy_data(name, counted);
        if (archive_write_finish_entry(out_.get()) != ARCHIVE_OK)
            cannot_extract(out_.get(), name, source_);

        extracted_[path] = is_file;
        if (outcome_ && archive_entry_filetype(entry) != S_IFDIR)
            names_.push_back(path);
        remember_directory_times(entry, path);
        ++stats_.entries;
    }

    void remember_directory_times(archive_entry* entry, const std::string& path)
    {
        if (archive_entry_filetype(entry) != S_IFDIR || archive_entry_hardlink(entry) ||
            !archive_entry_mtime_is_set(entry)) {
            directory_times_.erase(path);
            return;
        }
        Times& times = directory_times_[path];
        times[0].tv_nsec = UTIME_OMIT;
        if (archive_entry_atime_is_set(entry))
            times[0] = {archive_entry_atime(entry), archive_entry_atime_nsec(entry)};
        times[1] = {archive_entry_mtime(entry), archive_entry_mtime_nsec(entry)};
    }

    void hand_over(ShardOutcome& outcome) const
    {
        outcome.names = names_;
        for (const auto& [path, times] : directory_times_)
            outcome.directory_times.emplace_back(path, times);
    }

    // libarchive sets the times of a directory that already existed (from an
    // earlier shard) at once, and the entries written into it afterwards move
    // its mtime again; so every directory entry gets its times once more at
    // the end, when nothing is written into it any more.
    void restore_directory_times() const
    {
        for (const auto& [path, times] : directory_times_) {
            const std::string full = join_path(dest_, path);
            if (utimensat(AT_FDCWD, full.c_str(), times.data(), AT_SYMLINK_NOFOLLOW) != 0)
                throw_cannot("set the times of", full, errno);
        }
    }

    std::string checked_path(const std::string& name) const
    {
        if (name.empty())
            refuse(name, source_, "it has no name");
        std::string path;
        switch (inside_path(name, path)) {
        case PathIssue::none:
            return path;
        case PathIssue::absolute:
            refuse(name, source_, "its path is absolute");
        case PathIssue::leaves:
            refuse(name, source_, "its path leaves the destination");
        case PathIssue::dot_dot:
            refuse(name, source_, "its path has a '..' component");
        }
        return path;
    }

    // Refuses what may not be extracted; true if the entry makes a file.
    bool check_kind(archive_entry* entry, const std::string& name, const std::string& path) const
    {
        if (const char* link = archive_entry_hardlink(entry)) {
            check_hardlink(name, link);
            return true;
        }
        const mode_t type = archive_entry_filetype(entry);
        check_type(type, name, source_);
        if (type == S_IFLNK) {
            const char* target = archive_entry_symlink(entry);
            check_symlink(name, parent_of(path), target ? target : "", source_);
        }
        return type == S_IFREG;
    }

    // A hard link must name a file this archive already extracted: anything
    // else could be a file outside the destination, and a hard link to a
    // symlink is a copy of the symlink that resolves from another directory.
    void check_hardlink(const std::string& name, const std::string& target) const
    {
        const std::string what = "it is a hard link to " + quoted(target);
        std::string path;
        switch (inside_path(target, path)) {
        case PathIssue::none:
            break;
        case PathIssue::absolute:
            refuse(name, source_, what + ", an absolute path");
        case PathIssue::leaves:
            refuse(name, source_, what + ", which leaves the destination");
        case PathIssue::dot_dot:
            refuse(name, source_, what + ", whose path has a '..' component");
        }
        const auto found = extracted_.find(path);
        if (found == extracted_.end() || !found->second)
            refuse(name, source_, what + ", which is not a file extracted before it");
    }

    static std::string normalized_link(const std::string& target)
    {
        std::string path;
        inside_path(target, path);  // already checked
        return path;
    }

    // A hard link entry repeats its file's mode, and its file was counted.
    void strip_special_bits(archive_entry* entry, bool is_hardlink)
    {
        const mode_t perm = archive_entry_perm(entry);
        if ((perm & kSpecialBits) == 0)
            return;
        archive_entry_set_perm(entry, perm & 0777);
        if (!is_hardlink)
            ++stats_.stripped;
    }

    // Counts what this entry creates before it is written: itself, unless it
    // is a directory that is already there (another shard made it), and
    // every missing parent directory libarchive makes on the way ("a/b/c/f"
    // alone makes four inodes).
    void count_entries(archive_entry* entry, const std::string& path)
    {
        std::uint64_t created = 0;
        for (std::string dir = parent_of(path); !dir.empty() && is_new_directory(dir); dir = parent_of(dir))
            ++created;
        const bool is_dir = archive_entry_filetype(entry) == S_IFDIR && !archive_entry_hardlink(entry);
        if (!is_dir || is_new_directory(path))
            ++created;
        budget_.add_entries(created, source_);
    }

    // True the first time this extraction meets dir, if nothing is there yet.
    // Once met, it is there or about to be made.
    bool is_new_directory(const std::string& dir)
    {
        if (!directories_.insert(dir).second)
            return false;
        struct stat st;
        return lstat(join_path(dest_, dir).c_str(), &st) != 0;
    }

    // A file's size as its header declares it, counted before its data is
    // read: a bomb stops before it is decompressed, and a sparse file counts
    // its holes (they read as zeros, and tmpfs may have to fill them).
    std::uint64_t count_declared_size(archive_entry* entry)
    {
        const la_int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
        const std::uint64_t declared = size > 0 ? static_cast<std::uint64_t>(size) : 0;
        budget_.add_bytes(declared, source_);
        return declared;
    }

    // counted: bytes of this entry already counted; data that reaches past
    // them (a sparse map beyond the declared size) is counted before it is
    // written.
    void copy_data(const std::string& name, std::uint64_t counted)
    {
        const void* block = nullptr;
        std::size_t size = 0;
        la_int64_t offset = 0;
        for (;;) {
            const int r = archive_read_data_block(in_.get(), &block, &size, &offset);
            if (r == ARCHIVE_EOF)
                return;
            if (r < ARCHIVE_WARN)
                cannot_read(in_.get(), source_);
            const std::uint64_t end = static_cast<std::uint64_t>(std::max<la_int64_t>(offset, 0)) + size;
            if (end > counted) {
                budget_.add_bytes(end - counted, source_);
                counted = end;
            }
            if (archive_write_data_block(out_.get(), block, size, offset) != ARCHIVE_OK)
                cannot_extract(out_.get(), name, source_);
            stats_.bytes += size;
        }
    }

    const std::string source_;
    const std::string dest_;
    Reader in_;
    Writer out_;
    // Every path extracted so far (normalized) and whether it is a file.
    std::unordered_map<std::string, bool> extracted_;
    using Times = std::array<struct timespec, 2>;  // atime, mtime as utimensat takes them
    std::unordered_map<std::string, Times> directory_times_;
    ShardOutcome* outcome_;
    std::vector<std::string> names_;  // non-directories written, when outcome_ wants them
    ExtractBudget unlimited_;          // the budget when the caller gives none
    ExtractBudget& budget_;
    std::unordered_set<std::string> directories_;  // met by count_entries: there or about to be
    ExtractStats stats_;
};

// --- squashfs -----------------------------------------------------------------

struct DirClose {
    void operator()(DIR* d) const { closedir(d); }
};
using Dir = std::unique_ptr<DIR, DirClose>;

std::string without_trailing_slashes(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

std::pair<std::string, std::string> split_parent(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

void require_new_destination(const std::string& image, const std::string& dest)
{
    struct stat st;
    if (lstat(dest.c_str(), &st) == 0)
        throw Error("cannot unpack " + image + " into " + dest + ": it already exists");
    if (errno != ENOENT)
        throw_cannot("unpack " + image + " into", dest, errno);
    const std::string parent = split_parent(without_trailing_slashes(dest)).first;
    if (stat(parent.c_str(), &st) != 0)
        throw_cannot("unpack " + image + " into", dest, errno);
    if (!S_ISDIR(st.st_mode))
        throw_cannot("unpack " + image + " into", dest, ENOTDIR);
}

struct ChildResult {
    int status = 0;      // as from waitpid
    std::string output;  // its stdout (unless a sink took it) and stderr, the tail only
};

using OutputSink = std::function<void(std::string_view)>;

// Keeps the end of what a program writes: enough for its last line.
void keep_tail(std::string& output, std::string_view more)
{
    constexpr std::size_t kKeep = 64 * 1024;
    output.append(more);
    if (output.size() > 2 * kKeep)
        output.erase(0, output.size() - kKeep);
}

// Reads each fd until its end, passing what comes to its sink; all at once,
// since a child blocked writing to one full pipe never closes the other.
void read_until_closed(const std::string& program, const std::vector<std::pair<int, OutputSink>>& streams)
{
    std::vector<pollfd> fds;
    for (const auto& stream : streams)
        fds.push_back({stream.first, POLLIN, 0});
    std::size_t open = fds.size();
    std::vector<char> buf(64 * 1024);
    while (open > 0) {
        if (poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR)
                continue;
            throw_cannot("read the output of", program, errno);
        }
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                fds[i].fd = -1;  // poll skips it from now on
                --open;
                continue;
            }
            streams[i].second(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        }
    }
}

// Runs args (see spawn) with stdin from /dev/null and stdout and stderr
// captured, or stdout passed to on_stdout as it comes.
ChildResult run_captured(const std::vector<std::string>& args, const OutputSink& on_stdout = {})
{
    const std::string& program = args.front();
    int output[2];
    if (pipe2(output, O_CLOEXEC) != 0)
        throw_cannot("run", program, errno);
    Fd out_read(output[0]), out_write(output[1]);
    int listing[2] = {-1, -1};
    if (on_stdout && pipe2(listing, O_CLOEXEC) != 0)
        throw_cannot("run", program, errno);
    Fd stdout_read(listing[0]), stdout_write(listing[1]);
    const int child_stdout = on_stdout ? stdout_write.get() : out_write.get();
    const Fd null = open_dev_null(O_RDONLY);
    const pid_t pid = spawn(args, SpawnIo{null.get(), child_stdout, out_write.get(), false});
    out_write.reset();
    stdout_write.reset();

    ChildResult result;
    std::vector<std::pair<int, OutputSink>> streams = {
        {out_read.get(), [&](std::string_view more) { keep_tail(result.output, more); }}};
    if (on_stdout)
        streams.emplace_back(stdout_read.get(), on_stdout);
    read_until_closed(program, streams);
    result.status = wait_for(pid, program);
    return result;
}

// The last non-empty line of a program's output, made safe for a one-line
// message.
std::string last_line(const std::string& output)
{
    const std::size_t end = output.find_last_not_of(" \t\r\n");
    if (end == std::string::npos)
        return "";
    const std::size_t newline = output.rfind('\n', end);
    std::string line = output.substr(newline == std::string::npos ? 0 : newline + 1, end + 1 - (newline + 1));
    for (char& c : line) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = ' ';
    }
    return trim(line);
}

// A path as an argument that no program can take for an option.
std::string not_an_option(const std::string& path)
{
    return starts_with(path, "-") ? "./" + path : path;
}

// Runs unsquashfs with options on image; throws naming the image and
// unsquashfs's last line unless it succeeds.
void run_unsquashfs(const std::string& image, std::vector<std::string> options, const OutputSink& on_stdout = {})
{
    options.insert(options.begin(), "unsquashfs");
    options.push_back(not_an_option(image));
    const ChildResult child = run_captured(options, on_stdout);
    if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0)
        return;
    const std::string line = last_line(child.output);
    throw Error("cannot unpack " + image + ": unsquashfs " + describe_exit(child.status) +
                (line.empty() ? "" : ": " + line));
}

void unpack_image(const std::string& image, const std::string& dest)
{
    run_unsquashfs(image, {"-no-progress", "-quiet", "-no-xattrs", "-d", not_an_option(dest)});
}

// The unsquashfs on PATH must be one that keeps a crafted image's entries
// inside the destination: its version is all there is to go by.
void check_unsquashfs_version()
{
    const policy::Verdict verdict = policy::unsquashfs_usable(run_captured({"unsquashfs", "-version"}).output);
    if (!verdict.allowed)
        throw Error(verdict.reason);
}

std::string first_bytes(const std::string& path, std::size_t count)
{
    const Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0)
        throw_cannot("read", path, errno);
    std::string bytes(count, '\0');
    const ssize_t n = pread(fd.get(), bytes.data(), count, 0);
    if (n < 0)
        throw_cannot("read", path, errno);
    bytes.resize(static_cast<std::size_t>(n));
    return bytes;
}

struct ImageSize {
    std::uint64_t bytes = 0;    // regular files, logical sizes
    std::uint64_t entries = 0;
};

// What image expands to, before anything of it is written: its listing's
// file sizes and names (squashfs_listing.hpp), which must count at least
// the superblock's inodes.  Fewer means the listing was not read right:
// refused, never guessed.
ImageSize measure_image(const std::string& image)
{
    ListingTotals listing;
    run_unsquashfs(image, {"-lln"}, [&](std::string_view chunk) { listing.feed(chunk); });
    listing.finish();
    const std::string cannot = "cannot tell what " + image + " expands to: ";
    const std::string remedy = "; check the image, or stage it with mode = \"mount\"";
    if (!listing.unreadable_line().empty())
        throw Error(cannot + "'unsquashfs -lln' listed " + quoted(listing.unreadable_line()) +
                    ", a file without a size" + remedy);
    const auto inodes = superblock_inodes(first_bytes(image, 96));
    if (!inodes)
        throw Error(cannot + "it has no squashfs 4.0 superblock" + remedy);
    if (listing.entries() < *inodes)
        throw Error(cannot + "'unsquashfs -lln' listed " + std::to_string(listing.entries()) +
                    " entries but its superblock counts " + std::to_string(*inodes) + " inodes" + remedy);
    return {listing.file_bytes(), listing.entries()};
}

// Walks what unsquashfs wrote, never following a symlink, and applies the
// rules extract_tar applies before writing.  unsquashfs cannot be told to
// leave devices out or to strip bits, so this happens afterwards; dest is
// private to the job until the caller renames it into place.
class TreeCheck {
public:
    TreeCheck(const std::string& image, const std::string& dest, ExtractBudget& budget)
        : image_(image), dest_(dest), budget_(budget)
    {
    }

    ExtractStats run()
    {
        Fd root(open(dest_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (root.get() < 0)
            throw_cannot("read", dest_, errno);
        walk(root.get(), "");
        return stats_;
    }

private:
    void walk(int dir_fd, const std::string& rel_dir)
    {
        const int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            throw_cannot("read", join_path(dest_, rel_dir), errno);
        Dir dir(fdopendir(fd));
        if (!dir) {
            ::close(fd);
            throw_cannot("read", join_path(dest_, rel_dir), errno);
        }
        errno = 0;
        while (const dirent* e = readdir(dir.get())) {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                check(dir_fd, e->d_name, rel_dir);
            errno = 0;
        }
        if (errno != 0)
            throw_cannot("read", join_path(dest_, rel_dir), errno);
    }

    void check(int dir_fd, const char* name, const std::string& rel_dir)
    {
        const std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
        struct stat st;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            throw_cannot("read", join_path(dest_, rel), errno);
        const mode_t type = st.st_mode & S_IFMT;
        check_type(type, rel, image_);
        budget_.add_entries(1, image_);
        ++stats_.entries;
        if (type == S_IFLNK) {
            check_symlink(rel, rel_dir, read_link(dir_fd, name, rel), image_);
            return;
        }
        if ((st.st_mode & kSpecialBits) != 0) {
            // Not a symlink (checked above), so following is harmless.
            if (fchmodat(dir_fd, name, st.st_mode & 0777, 0) != 0)
                throw_cannot("change the mode of", join_path(dest_, rel), errno);
            ++stats_.stripped;
        }
        if (type == S_IFREG && first_sight(st)) {
            budget_.add_bytes(static_cast<std::uint64_t>(st.st_size), image_);
            stats_.bytes += static_cast<std::uint64_t>(st.st_size);
        }
        if (type == S_IFDIR) {
            const Fd sub(openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub.get() < 0)
                throw_cannot("read", join_path(dest_, rel), errno);
            walk(sub.get(), rel);
        }
    }

    // Hard-linked files hold their data once.
    bool first_sight(const struct stat& st)
    {
        return st.st_nlink < 2 || seen_.insert({st.st_dev, st.st_ino}).second;
    }

    std::string read_link(int dir_fd, const char* name, const std::string& rel) const
    {
        std::vector<char> buf(PATH_MAX + 1);
        const ssize_t n = readlinkat(dir_fd, name, buf.data(), buf.size());
        if (n < 0)
            throw_cannot("read the symlink", join_path(dest_, rel), errno);
        if (static_cast<std::size_t>(n) == buf.size())
            refuse(rel, image_, "its symlink target is longer than PATH_MAX");
        return std::string(buf.data(), static_cast<std::size_t>(n));
    }

    const std::string& image_;
    const std::string& dest_;
    ExtractBudget& budget_;  // counted once more, now from what is on disk
    std::set<std::pair<dev_t, ino_t>> seen_;
    ExtractStats stats_;
};

}  // namespace

ExtractStats extract_tar(const std::string& archive, const std::string& dest, ShardOutcome* outcome,
                         ExtractBudget* budget)
{
    return TarExtraction(archive, dest, outcome, budget).run();
}

void restore_directory_times(const std::string& dest, const ShardOutcome& outcome)
{
    const std::string base = canonical_directory(dest);
    for (const auto& [path, times] : outcome.directory_times) {
        const std::string full = join_path(base, path);
        if (utimensat(AT_FDCWD, full.c_str(), times.data(), AT_SYMLINK_NOFOLLOW) != 0)
            throw_cannot("set the times of", full, errno);
    }
}

ExtractStats extract_squashfs(const std::string& image, const std::string& dest, ExtractBudget* budget)
{
    require_new_destination(image, dest);
    check_unsquashfs_version();
    ExtractBudget unlimited;
    ExtractBudget& counted = budget ? *budget : unlimited;
    const ImageSize size = measure_image(image);
    counted.check_room(size.bytes, size.entries, image);
    try {
        unpack_image(image, dest);
        return TreeCheck(image, dest, counted).run();
    } catch (const Error& e) {
        if (!remove_tree(dest).ok())
            throw Error(std::string(e.what()) + "; also could not remove " + dest);
        throw;
    } catch (...) {
        remove_tree(dest);
        throw;
    }
}

}  // namespace dlstage::stager
