#include "pack/shard_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <locale.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include <archive_entry.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "pack/output_files.hpp"

namespace dlstage::pack {

namespace {
std::string read_link(const std::string& path, std::uint64_t length)
{
    std::string target(static_cast<std::size_t>(length) + 1, '\0');
    const ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0)
        throw_cannot("read", shown_path(path), errno);
    if (static_cast<std::uint64_t>(n) != length)
        throw Error(quoted(path) + " changed while being packed");
    target.resize(static_cast<std::size_t>(n));
    return target;
}

// The file as walked: a file replaced or resized since would make the
// shard disagree with its header.
Fd open_unchanged(const std::string& path, std::uint64_t size)
{
    Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", shown_path(path), errno);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != size)
        throw Error(quoted(path) + " changed while being packed");
    return fd;
}

// Names go into pax headers as UTF-8, converted from the locale's charset.
// Taking names as UTF-8 whatever the user's locale keeps their bytes: valid
// UTF-8 passes unchanged and anything else is stored raw.
class Utf8Names {
public:
    Utf8Names() : utf8_(newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0)))
    {
        if (utf8_)
            previous_ = uselocale(utf8_);
    }
    ~Utf8Names()
    {
        if (utf8_) {
            uselocale(previous_);
            freelocale(utf8_);
        }
    }
    Utf8Names(const Utf8Names&) = delete;
    Utf8Names& operator=(const Utf8Names&) = delete;

private:
    locale_t utf8_;
    locale_t previous_ = LC_GLOBAL_LOCALE;
};
}  // namespace

ShardWriter::ShardWriter(const std::string& path) : path_(path), archive_(archive_write_new())
{
    fd_ = Fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd_.valid())
        throw_cannot("create", shown_path(path), errno);
    // Restricted pax: plain ustar headers unless a name, link target or
    // size needs more; no atime/ctime, which would differ per run.
    // No padding after the end marker, so the shard's size is what the
    // layout predicts.
    if (archive_write_set_format_pax_restricted(archive_) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(archive_, 1) != ARCHIVE_OK ||
        archive_write_open_fd(archive_, fd_.get()) != ARCHIVE_OK)
        throw_archive_error();
}

ShardWriter::~ShardWriter()
{
    archive_write_free(archive_);
}

void ShardWriter::add(const std::string& root, const PackEntry& entry, const Metadata& meta, std::vector<char>& buffer)
{
    const std::string source = root + "/" + entry.path;
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> header(archive_entry_new(), &archive_entry_free);
    archive_entry* e = header.get();
    archive_entry_copy_pathname(e, entry.path.c_str());
    archive_entry_set_perm(e, meta.mode & 07777);
    // Numeric ids only: looking names up costs a directory service
    // query per owner, and nodes may not know the names anyway.
    archive_entry_set_uid(e, meta.uid);
    archive_entry_set_gid(e, meta.gid);
    archive_entry_set_mtime(e, meta.mtime.tv_sec, meta.mtime.tv_nsec);
    Fd file;
    switch (entry.type) {
    case PackEntryType::Dir: archive_entry_set_filetype(e, AE_IFDIR); break;
    case PackEntryType::Symlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_copy_symlink(e, read_link(source, entry.size).c_str());
        break;
    case PackEntryType::File:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(entry.size));
        file = open_unchanged(source, entry.size);
        break;
    }
    // ARCHIVE_WARN: a name that is not UTF-8 went in as its raw bytes
    // (pax hdrcharset=BINARY), which extracts to the very same name.
    if (archive_write_header(archive_, e) < ARCHIVE_WARN)
        throw_archive_error(entry.path);
    if (file.valid())
        copy_data(file.get(), source, entry.size, buffer);
}

void ShardWriter::finish()
{
    if (archive_write_close(archive_) != ARCHIVE_OK)
        throw_archive_error();
    if (fsync(fd_.get()) != 0)
        throw_cannot("write", shown_path(path_), errno);
    if (const int err = fd_.close())
        throw_cannot("write", shown_path(path_), err);
}

void ShardWriter::throw_archive_error(const std::string& member)
{
    const char* why = archive_error_string(archive_);
    throw Error("cannot write " + quoted(path_) + (member.empty() ? "" : " (" + quoted(member) + ")") + ": " +
                (why ? why : "unknown libarchive error"));
}

void ShardWriter::copy_data(int fd, const std::string& path, std::uint64_t size, std::vector<char>& buffer)
{
    for (std::uint64_t left = size; left > 0;) {
        const ssize_t n = ::read(fd, buffer.data(), std::min<std::uint64_t>(left, buffer.size()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("read", shown_path(path), errno);
        if (n == 0)
            throw Error(quoted(path) + " changed while being packed (it shrank)");
        if (archive_write_data(archive_, buffer.data(), static_cast<std::size_t>(n)) != n)
            throw_archive_error(path);
        left -= static_cast<std::uint64_t>(n);
    }
}

void write_shard(const std::string& root, const PackTree& tree, const PackShard& shard, const std::string& path,
                 std::vector<char>& buffer, const MemberWritten& written)
{
    const Utf8Names utf8_names;
    ShardWriter writer(path);
    for (std::size_t i : shard.members) {
        writer.add(root, tree.entries[i], tree.metadata[i], buffer);
        if (written)
            written(tree.entries[i]);
    }
    writer.finish();
}

}  // namespace dlstage::pack
