// extract_tar and restore_directory_times (see extract.hpp): libarchive
// reads each shard, every entry is checked by entry_rules before it is
// written, and the writing stays below the destination.
#include "stager/extract/extract.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"
#include "stager/extract/entry_rules.hpp"

namespace dlstage::stager {

// The tar reader reports entry types as AE_IF*; the squashfs check sees
// st_mode.  One type check serves both because the values are the same.
static_assert(AE_IFREG == S_IFREG && AE_IFDIR == S_IFDIR && AE_IFLNK == S_IFLNK && AE_IFCHR == S_IFCHR &&
              AE_IFBLK == S_IFBLK && AE_IFIFO == S_IFIFO && AE_IFSOCK == S_IFSOCK);

namespace {

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
                                                  ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
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
        case PathIssue::none: return path;
        case PathIssue::absolute: refuse(name, source_, "its path is absolute");
        case PathIssue::leaves: refuse(name, source_, "its path leaves the destination");
        case PathIssue::dot_dot: refuse(name, source_, "its path has a '..' component");
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
            check_symlink(name, std::string(parent_in_tree(path)), target ? target : "", source_);
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
        case PathIssue::none: break;
        case PathIssue::absolute: refuse(name, source_, what + ", an absolute path");
        case PathIssue::leaves: refuse(name, source_, what + ", which leaves the destination");
        case PathIssue::dot_dot: refuse(name, source_, what + ", whose path has a '..' component");
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
        for (std::string dir(parent_in_tree(path)); !dir.empty() && is_new_directory(dir);
             dir = std::string(parent_in_tree(dir)))
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
    ExtractBudget unlimited_;         // the budget when the caller gives none
    ExtractBudget& budget_;
    std::unordered_set<std::string> directories_;  // met by count_entries: there or about to be
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

}  // namespace dlstage::stager
