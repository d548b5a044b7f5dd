// dlstage pack DIR OUT: turn a dataset directory of many small files into
// few big ones.
//
// ImageNet-like datasets hold about a million files of ~110 KB; on a
// parallel file system every file costs a metadata operation and an inode,
// both when staging and when training.  A squashfs image is one file that
// nodes mount or extract; tar shards (WebDataset style) are a few balanced
// files that readers stream.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <iostream>
#include <limits>
#include <locale.h>
#include <memory>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "cli/commands.hpp"
#include "lib/dataset_format.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/pack_plan.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage pack [--format squashfs|tar] [--shards N | --shard-size SIZE]\n"
                 "                    [--block-size SIZE] [--force] DIR OUT\n"
                 "Pack a dataset directory of many small files into few big files that stage\n"
                 "quickly: one squashfs image OUT (the default when OUT ends in .sqfs or\n"
                 "  .squashfs), or tar shards OUT-000000.tar, OUT-000001.tar, ... (otherwise).\n"
                 "\n"
                 "  --format squashfs|tar  the output format (default: from OUT's name)\n"
                 "  --shards N             tar: N shards (fewer if DIR holds fewer samples)\n"
                 "  --shard-size SIZE      tar: as many shards as needed so that none is larger\n"
                 "                         than SIZE (default: --shard-size 1G)\n"
                 "  --block-size SIZE      squashfs: block size, a power of two from 4K to 1M\n"
                 "                         (default 128K)\n"
                 "  --force                replace existing output\n"
                 "\n"
                 "Tar shards keep each sample (the files of a directory sharing their name up to\n"
                 "the first '.', e.g. x.jpg and x.cls) together, are balanced in size and hold\n"
                 "every class directory in even shares.  Each shard extracts on its own; all\n"
                 "shards extracted into one directory reproduce DIR.  The same DIR always gives\n"
                 "the same bytes.  Devices, fifos and sockets are refused.\n";
}

constexpr std::uint64_t kDefaultShardSize = 1ull << 30;
// A block of 128K holds most of a ~110 KB sample: reading one sample at
// random reads about one block, where 1M blocks (squashfs's maximum) would
// read and decompress eight times more per sample; and compression still
// sees whole samples, so little ratio is lost.
constexpr std::uint64_t kDefaultBlockSize = 128ull << 10;
constexpr std::uint64_t kMinBlockSize = 4ull << 10;
constexpr std::uint64_t kMaxBlockSize = 1ull << 20;
constexpr std::size_t kMaxShards = 1000000;  // OUT-NNNNNN.tar

enum class PackFormat { Squashfs, Tar };

struct PackOptions {
    std::string format;            // "" = from OUT's name
    std::size_t shards = 0;        // 0: not given
    std::uint64_t shard_size = 0;  // 0: not given
    std::uint64_t block_size = 0;  // 0: not given
    bool force = false;
    bool help = false;
    std::string dir;
    std::string out;
};

// --- command line ------------------------------------------------------------

// Fills options from args; returns a usage problem, or "".
std::string parse_args(const std::vector<std::string>& args, PackOptions& options)
{
    std::vector<std::string> operands;
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (options_done || arg.empty() || arg[0] != '-' || arg == "-") {
            operands.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        if (arg == "-h" || arg == "--help") {
            options.help = true;
            return "";
        }
        if (arg == "--force") {
            options.force = true;
            continue;
        }
        // Options with a value: "--name VALUE" or "--name=VALUE".
        const std::size_t eq = arg.find('=');
        const std::string name = arg.substr(0, eq);
        if (name != "--format" && name != "--shards" && name != "--shard-size" && name != "--block-size")
            return "pack: unknown option '" + arg + "'";
        std::string value;
        if (eq != std::string::npos)
            value = arg.substr(eq + 1);
        else if (i + 1 < args.size())
            value = args[++i];
        if (value.empty())
            return "pack: option " + name + " needs a value";
        try {
            if (name == "--format") {
                if (value != "squashfs" && value != "tar")
                    return "pack: --format is squashfs or tar, not " + quoted(value);
                options.format = value;
            } else if (name == "--shards") {
                options.shards = parse_count(value, 1, kMaxShards);
            } else if (name == "--shard-size") {
                options.shard_size = parse_size(value);
                if (options.shard_size == 0)
                    return "pack: --shard-size must be more than 0";
            } else {
                options.block_size = parse_size(value);
                const std::uint64_t b = options.block_size;
                if (b < kMinBlockSize || b > kMaxBlockSize || (b & (b - 1)) != 0)
                    return "pack: --block-size must be a power of two from 4K to 1M, not " + quoted(value);
            }
        } catch (const Error& e) {
            return "pack: " + name + ": " + e.what();
        }
    }
    if (operands.size() != 2)
        return operands.size() < 2 ? "pack needs DIR and OUT" : "pack takes only DIR and OUT";
    options.dir = operands[0];
    while (options.dir.size() > 1 && options.dir.back() == '/')
        options.dir.pop_back();  // "data/" names its files "data/x", not "data//x"
    options.out = operands[1];
    if (options.out.empty() || options.out.back() == '/')
        return "pack: OUT names a file (or, for tar, the shards' prefix), not a directory";
    return "";
}

PackFormat format_of(const PackOptions& options)
{
    if (!options.format.empty())
        return options.format == "squashfs" ? PackFormat::Squashfs : PackFormat::Tar;
    return format_from_name(options.out) == Format::Squashfs ? PackFormat::Squashfs : PackFormat::Tar;
}

// Options that do not fit together or do not fit the format; or "".
std::string check_combination(const PackOptions& options, PackFormat format)
{
    if (options.shards && options.shard_size)
        return "pack: give --shards or --shard-size, not both";
    if (format == PackFormat::Squashfs && (options.shards || options.shard_size))
        return "pack: --shards and --shard-size are for tar shards; " + quoted(options.out) +
               " is a squashfs image (use --format tar for shards)";
    if (format == PackFormat::Tar && options.block_size)
        return "pack: --block-size is for squashfs images";
    return "";
}

// --- the tree ---------------------------------------------------------------------

struct Metadata {
    mode_t mode = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    struct timespec mtime {};
};

struct Tree {
    std::vector<PackEntry> entries;  // for the plan
    std::vector<Metadata> metadata;  // same indexes
    std::size_t files = 0;           // files and symlinks
    std::uint64_t file_bytes = 0;
    std::time_t newest_mtime = 0;
};

[[noreturn]] void fail(const std::string& what, const std::string& path, int err)
{
    throw_cannot(what, quoted(path), err);
}

const char* special_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a fifo";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "not a file, directory or symlink";
}

std::vector<std::string> sorted_names(const std::string& dir_path)
{
    DIR* dir = opendir(dir_path.c_str());
    if (!dir)
        fail("read", dir_path, errno);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* d = readdir(dir)) {
        if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
            names.emplace_back(d->d_name);
    }
    const int err = errno;
    closedir(dir);
    if (err)
        fail("read", dir_path, err);
    std::sort(names.begin(), names.end());
    return names;
}

void add_entry(Tree& tree, const std::string& rel, const struct stat& st)
{
    PackEntry entry;
    entry.path = rel;
    if (S_ISDIR(st.st_mode)) {
        entry.type = PackEntryType::Dir;
    } else {
        entry.type = S_ISLNK(st.st_mode) ? PackEntryType::Symlink : PackEntryType::File;
        entry.size = static_cast<std::uint64_t>(st.st_size);  // a symlink's: its target's length
        ++tree.files;
        if (entry.type == PackEntryType::File)
            tree.file_bytes += entry.size;
    }
    tree.entries.push_back(std::move(entry));
    tree.metadata.push_back({st.st_mode, st.st_uid, st.st_gid, st.st_mtim});
    tree.newest_mtime = std::max(tree.newest_mtime, st.st_mtim.tv_sec);
}

// Depth-first, names sorted: the same tree always gives the same list.
void walk(const std::string& root, const std::string& rel, Tree& tree)
{
    for (const std::string& name : sorted_names(rel.empty() ? root : root + "/" + rel)) {
        const std::string child_rel = rel.empty() ? name : rel + "/" + name;
        const std::string child_path = root + "/" + child_rel;
        struct stat st {};
        if (lstat(child_path.c_str(), &st) != 0)
            fail("read", child_path, errno);
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
            throw Error(quoted(child_path) + " is " + special_kind(st.st_mode) +
                        "; pack takes only files, directories and symlinks");
        // Found now rather than after hours of packing (mksquashfs would
        // even store an unreadable file as an empty one).
        if (S_ISREG(st.st_mode) && access(child_path.c_str(), R_OK) != 0)
            fail("read", child_path, errno);
        add_entry(tree, child_rel, st);
        if (S_ISDIR(st.st_mode))
            walk(root, child_rel, tree);
    }
}

Tree read_tree(const std::string& root)
{
    Tree tree;
    struct stat st {};
    if (stat(root.c_str(), &st) == 0)
        tree.newest_mtime = st.st_mtim.tv_sec;
    walk(root, "", tree);
    return tree;
}

// --- paths ------------------------------------------------------------------------

std::string dir_of(const std::string& path)
{
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path)
{
    return path.substr(path.rfind('/') + 1);
}

std::string real_path(const std::string& path)
{
    std::unique_ptr<char, decltype(&std::free)> resolved(realpath(path.c_str(), nullptr), &std::free);
    if (!resolved)
        fail("resolve", path, errno);
    return resolved.get();
}

void check_input_dir(const std::string& dir)
{
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
        fail("read", dir, errno);
    if (!S_ISDIR(st.st_mode))
        throw Error(quoted(dir) + " is not a directory");
}

// OUT's directory must exist, and OUT must not land inside DIR, where the
// next pack of DIR would take it in.
void check_output_place(const std::string& dir, const std::string& out)
{
    const std::string out_dir = dir_of(out);
    struct stat st {};
    if (stat(out_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error("cannot write " + quoted(out) + ": directory " + quoted(out_dir) + " does not exist");
    const std::string real_dir = real_path(dir);
    const std::string real_out_dir = real_path(out_dir);
    if (real_out_dir == real_dir || starts_with(real_out_dir, real_dir == "/" ? "/" : real_dir + "/"))
        throw Error("OUT " + quoted(out) + " is inside DIR " + quoted(dir) + "; write it elsewhere");
}

std::string temporary_name(const std::string& path)
{
    return path + ".tmp." + std::to_string(getpid());
}

std::uint64_t file_size(const std::string& path)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        fail("read", path, errno);
    return static_cast<std::uint64_t>(st.st_size);
}

void rename_into_place(const std::string& from, const std::string& to)
{
    if (std::rename(from.c_str(), to.c_str()) != 0)
        fail("create", to, errno);
}

// --- temporaries, also on SIGINT/SIGTERM/SIGHUP -----------------------------------

// Read by the signal handler: set before the handlers are installed and not
// changed while they are.
const std::vector<std::string>* g_temporaries = nullptr;
volatile pid_t g_child = 0;

extern "C" void remove_temporaries_and_die(int signal_number)
{
    if (g_child > 0)
        kill(g_child, SIGTERM);
    if (g_temporaries)
        for (const std::string& path : *g_temporaries)
            unlink(path.c_str());
    std::signal(signal_number, SIG_DFL);
    raise(signal_number);
}

// Output files under temporary names: whatever stops the pack (an error,
// Ctrl-C, scancel) removes them, so no half-written file is left, and the
// final names only ever hold complete output.
class Temporaries {
public:
    explicit Temporaries(std::vector<std::string> paths) : paths_(std::move(paths))
    {
        g_temporaries = &paths_;
        for (int s : kSignals)
            std::signal(s, remove_temporaries_and_die);
    }
    ~Temporaries()
    {
        for (int s : kSignals)
            std::signal(s, SIG_DFL);
        g_temporaries = nullptr;
        for (const std::string& path : paths_)
            unlink(path.c_str());  // after the renames: nothing left to remove
    }
    Temporaries(const Temporaries&) = delete;
    Temporaries& operator=(const Temporaries&) = delete;

    const std::string& operator[](std::size_t i) const { return paths_[i]; }

private:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    std::vector<std::string> paths_;
};

// --- squashfs ---------------------------------------------------------------------

// The CPUs this process may run on: inside a Slurm job, the job's share of
// the node, not the whole node.
int usable_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? static_cast<int>(online) : 1;
}

// The non-empty lines a child writes to fd, until it closes it.
// mksquashfs's stderr: bounded memory, whatever the child says.
struct StderrLines {
    static constexpr std::size_t kKept = 1000;
    std::vector<std::string> lines;
    void operator()(const std::string& raw)
    {
        if (const std::string line = trim(raw); !line.empty()) {
            if (lines.size() == kKept)
                lines.erase(lines.begin() + kKept / 2);  // keep the first and the latest
            lines.push_back(line);
        }
    }
};

struct ChildResult {
    std::string failure;              // "" when it exited with status 0
    std::vector<std::string> stderr;  // its messages, non-empty lines
};

// Runs argv with stdout discarded (mksquashfs prints a long summary there)
// and its stderr collected.
ChildResult run_collecting_stderr(const std::vector<std::string>& argv)
{
    StderrLines collected;
    StderrRunOptions options;
    options.discard_stdout = true;
    options.started = [](pid_t pid) { g_child = pid; };
    int status = 0;
    try {
        status = run_reading_stderr(argv, std::ref(collected), options);
    } catch (const Error& e) {  // it could not be started
        g_child = 0;
        return ChildResult{e.what(), {}};
    }
    ChildResult result;
    result.stderr = std::move(collected.lines);
    g_child = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return result;
    const std::string last_line = result.stderr.empty() ? "" : result.stderr.back();
    result.failure = argv[0] + " " + describe_exit(status) + (last_line.empty() ? "" : ": " + last_line);
    return result;
}

// mksquashfs goes on after some problems and still exits 0: a file it
// cannot read becomes an empty file ("..., creating empty file"), an entry
// it cannot stat is left out ("..., ignoring").  Such an image is not the
// tree, so those lines fail the pack; other lines are passed on.
std::string data_loss_in(const std::vector<std::string>& lines)
{
    for (const std::string& line : lines) {
        std::string lower = line;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        for (const char* sign : {"creating empty", "ignoring", "skipping", "cannot stat", "could not open",
                                 "failed to read"})
            if (lower.find(sign) != std::string::npos)
                return line;
    }
    return "";
}

std::vector<std::string> mksquashfs_command(const std::string& dir, const std::string& image,
                                            std::uint64_t block_size, const Tree& tree)
{
    std::vector<std::string> argv = {"mksquashfs", dir, image, "-noappend", "-no-progress",
                                     "-b", std::to_string(block_size), "-no-xattrs",
                                     "-processors", std::to_string(usable_cpus())};
    // The image's creation time would be now: use the newest mtime in the
    // tree, so that the same tree gives the same image.  mksquashfs refuses
    // the option when SOURCE_DATE_EPOCH is set; then that time is used.
    if (!std::getenv("SOURCE_DATE_EPOCH"))
        argv.insert(argv.end(), {"-mkfs-time", std::to_string(tree.newest_mtime)});
    return argv;
}

std::string percent_of(std::uint64_t part, std::uint64_t whole)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buf;
}

int pack_squashfs(const PackOptions& options, const Tree& tree)
{
    const Temporaries temporary({temporary_name(options.out)});
    const std::uint64_t block_size = options.block_size ? options.block_size : kDefaultBlockSize;
    const ChildResult run = run_collecting_stderr(mksquashfs_command(options.dir, temporary[0], block_size, tree));
    if (!run.failure.empty())
        throw Error("cannot create " + quoted(options.out) + ": " + run.failure);
    if (const std::string loss = data_loss_in(run.stderr); !loss.empty())
        throw Error("cannot create " + quoted(options.out) + ": mksquashfs: " + loss);
    for (const std::string& line : run.stderr)
        std::cerr << kMessagePrefix << "mksquashfs: " << line << "\n";
    const std::uint64_t image_bytes = file_size(temporary[0]);
    rename_into_place(temporary[0], options.out);
    std::cerr << kMessagePrefix << "packed " << tree.files << " files (" << format_size(tree.file_bytes)
              << ") into " << options.out << " (" << format_size(image_bytes)
              << (tree.file_bytes ? ", " + percent_of(image_bytes, tree.file_bytes) + " of the input" : "")
              << ")\n";
    return kExitOk;
}

// --- tar shards -------------------------------------------------------------------

std::string shard_name(const std::string& prefix, std::size_t index)
{
    char number[32];
    std::snprintf(number, sizeof number, "%06zu", index);
    return prefix + "-" + number + ".tar";
}

// Shards of an earlier pack with the same prefix: PREFIX-<digits>.tar.
std::vector<std::string> existing_shards(const std::string& prefix)
{
    const std::string dir = dir_of(prefix);
    const std::string lead = base_of(prefix) + "-";
    std::vector<std::string> found;
    for (const std::string& name : sorted_names(dir)) {
        if (!starts_with(name, lead) || !ends_with(name, ".tar"))
            continue;
        const std::string number = name.substr(lead.size(), name.size() - lead.size() - 4);
        if (number.size() >= 6 && number.find_first_not_of("0123456789") == std::string::npos)
            found.push_back(prefix.substr(0, prefix.rfind('/') + 1) + name);  // spelled as shard_name spells it
    }
    return found;
}

class ShardWriter {
public:
    explicit ShardWriter(const std::string& path) : path_(path), archive_(archive_write_new())
    {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ < 0)
            fail("create", path, errno);
        // Restricted pax: plain ustar headers unless a name, link target or
        // size needs more; no atime/ctime, which would differ per run.
        // No padding after the end marker, so the shard's size is what the
        // plan predicts.
        if (archive_write_set_format_pax_restricted(archive_) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(archive_, 1) != ARCHIVE_OK ||
            archive_write_open_fd(archive_, fd_) != ARCHIVE_OK)
            throw_archive_error();
    }
    ~ShardWriter()
    {
        archive_write_free(archive_);
        if (fd_ >= 0)
            ::close(fd_);
    }
    ShardWriter(const ShardWriter&) = delete;
    ShardWriter& operator=(const ShardWriter&) = delete;

    void add(const std::string& root, const PackEntry& entry, const Metadata& meta, std::vector<char>& buffer)
    {
        const std::string source = root + "/" + entry.path;
        std::unique_ptr<archive_entry, decltype(&archive_entry_free)> header(archive_entry_new(),
                                                                             &archive_entry_free);
        archive_entry* e = header.get();
        archive_entry_copy_pathname(e, entry.path.c_str());
        archive_entry_set_perm(e, meta.mode & 07777);
        // Numeric ids only: looking names up costs a directory service
        // query per owner, and nodes may not know the names anyway.
        archive_entry_set_uid(e, meta.uid);
        archive_entry_set_gid(e, meta.gid);
        archive_entry_set_mtime(e, meta.mtime.tv_sec, meta.mtime.tv_nsec);
        int fd = -1;
        switch (entry.type) {
        case PackEntryType::Dir:
            archive_entry_set_filetype(e, AE_IFDIR);
            break;
        case PackEntryType::Symlink:
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_copy_symlink(e, read_link(source, entry.size).c_str());
            break;
        case PackEntryType::File:
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, static_cast<la_int64_t>(entry.size));
            fd = open_unchanged(source, entry.size);
            break;
        }
        const FdCloser closer{fd};
        // ARCHIVE_WARN: a name that is not UTF-8 went in as its raw bytes
        // (pax hdrcharset=BINARY), which extracts to the very same name.
        if (archive_write_header(archive_, e) < ARCHIVE_WARN)
            throw_archive_error(entry.path);
        if (fd >= 0)
            copy_data(fd, source, entry.size, buffer);
    }

    // The end marker, then the data on disk before the shard gets its name.
    void finish()
    {
        if (archive_write_close(archive_) != ARCHIVE_OK)
            throw_archive_error();
        if (fsync(fd_) != 0)
            fail("write", path_, errno);
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0)
            fail("write", path_, errno);
    }

private:
    struct FdCloser {
        int fd;
        ~FdCloser()
        {
            if (fd >= 0)
                ::close(fd);
        }
    };

    [[noreturn]] void throw_archive_error(const std::string& member = "")
    {
        const char* why = archive_error_string(archive_);
        throw Error("cannot write " + quoted(path_) + (member.empty() ? "" : " (" + quoted(member) + ")") + ": " +
                    (why ? why : "unknown libarchive error"));
    }

    static std::string read_link(const std::string& path, std::uint64_t length)
    {
        std::string target(static_cast<std::size_t>(length) + 1, '\0');
        const ssize_t n = readlink(path.c_str(), target.data(), target.size());
        if (n < 0)
            fail("read", path, errno);
        if (static_cast<std::uint64_t>(n) != length)
            throw Error(quoted(path) + " changed while being packed");
        target.resize(static_cast<std::size_t>(n));
        return target;
    }

    // The file as walked: a file replaced or resized since would make the
    // shard disagree with its header.
    static int open_unchanged(const std::string& path, std::uint64_t size)
    {
        const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            fail("read", path, errno);
        struct stat st {};
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != size) {
            ::close(fd);
            throw Error(quoted(path) + " changed while being packed");
        }
        return fd;
    }

    void copy_data(int fd, const std::string& path, std::uint64_t size, std::vector<char>& buffer)
    {
        for (std::uint64_t left = size; left > 0;) {
            const ssize_t n = ::read(fd, buffer.data(), std::min<std::uint64_t>(left, buffer.size()));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                fail("read", path, errno);
            if (n == 0)
                throw Error(quoted(path) + " changed while being packed (it shrank)");
            if (archive_write_data(archive_, buffer.data(), static_cast<std::size_t>(n)) != n)
                throw_archive_error(path);
            left -= static_cast<std::uint64_t>(n);
        }
    }

    std::string path_;
    archive* archive_;
    int fd_ = -1;
};

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

void write_shard(const std::string& root, const Tree& tree, const PackShard& shard, const std::string& path,
                 std::vector<char>& buffer)
{
    const Utf8Names utf8_names;
    ShardWriter writer(path);
    for (std::size_t i : shard.members)
        writer.add(root, tree.entries[i], tree.metadata[i], buffer);
    writer.finish();
}

PackPlan plan_shards(const PackOptions& options, const Tree& tree)
{
    if (options.shards)
        return plan_pack_by_count(tree.entries, options.shards);
    return plan_pack_by_size(tree.entries, options.shard_size ? options.shard_size : kDefaultShardSize);
}

void say_fewer_shards(const PackOptions& options, const PackPlan& plan)
{
    if (options.shards && plan.shards.size() < options.shards)
        std::cerr << kMessagePrefix << quoted(options.dir) << " holds only " << plan.sample_count
                  << (plan.sample_count == 1 ? " sample" : " samples") << ": writing " << plan.shards.size()
                  << (plan.shards.size() == 1 ? " shard" : " shards") << " instead of " << options.shards << "\n";
}

int pack_tar(const PackOptions& options, const Tree& tree, const std::vector<std::string>& old_shards)
{
    const PackPlan plan = plan_shards(options, tree);
    say_fewer_shards(options, plan);
    std::vector<std::string> finals;
    std::vector<std::string> temporaries;
    for (std::size_t s = 0; s < plan.shards.size(); ++s) {
        finals.push_back(shard_name(options.out, s));
        temporaries.push_back(temporary_name(finals.back()));
    }
    const Temporaries temporary(temporaries);
    std::vector<char> buffer(1 << 20);
    for (std::size_t s = 0; s < plan.shards.size(); ++s)
        write_shard(options.dir, tree, plan.shards[s], temporary[s], buffer);

    // Only a complete set gets the final names: a pack that fails halfway
    // leaves no shards that look like a whole dataset.
    std::uint64_t smallest = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t largest = 0;
    for (std::size_t s = 0; s < finals.size(); ++s) {
        const std::uint64_t bytes = file_size(temporary[s]);
        smallest = std::min(smallest, bytes);
        largest = std::max(largest, bytes);
        rename_into_place(temporary[s], finals[s]);
    }
    // Shards of an earlier, larger pack would be staged with the new ones.
    for (const std::string& old : old_shards)
        if (std::find(finals.begin(), finals.end(), old) == finals.end() && unlink(old.c_str()) != 0)
            fail("remove the old shard", old, errno);

    std::cerr << kMessagePrefix << "packed " << tree.files << " files (" << format_size(tree.file_bytes)
              << ") into " << finals.size() << (finals.size() == 1 ? " shard of " : " shards of ")
              << format_size(smallest) << (smallest == largest ? "" : ".." + format_size(largest)) << "\n";
    return kExitOk;
}
}  // namespace

int cmd_pack(const GlobalOptions&, const std::vector<std::string>& args)
{
    PackOptions options;
    if (const std::string problem = parse_args(args, options); !problem.empty())
        return usage_error(problem, "pack");
    if (options.help) {
        print_help();
        return kExitOk;
    }
    const PackFormat format = format_of(options);
    if (const std::string problem = check_combination(options, format); !problem.empty())
        return usage_error(problem, "pack");

    check_input_dir(options.dir);
    check_output_place(options.dir, options.out);
    std::vector<std::string> old_shards;
    if (format == PackFormat::Squashfs) {
        struct stat st {};
        if (lstat(options.out.c_str(), &st) == 0 && !options.force)
            throw Error(options.out + " exists; use --force to replace it");
    } else {
        old_shards = existing_shards(options.out);
        if (!old_shards.empty() && !options.force)
            throw Error(old_shards.front() + " exists; use --force to replace it");
    }
    const Tree tree = read_tree(options.dir);
    return format == PackFormat::Squashfs ? pack_squashfs(options, tree) : pack_tar(options, tree, old_shards);
}

}  // namespace dlstage::cli
