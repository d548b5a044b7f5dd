// extract_squashfs (see extract.hpp): unsquashfs unpacks the image, then
// the tree it wrote is checked by the same entry rules as a tar shard.
#include "stager/extract/extract.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/unsquashfs.hpp"
#include "stager/extract/entry_rules.hpp"
#include "stager/extract/squashfs_listing.hpp"

namespace dlstage::stager {

namespace {

void require_new_destination(const std::string& image, const std::string& dest)
{
    struct stat st;
    if (lstat(dest.c_str(), &st) == 0)
        throw Error("cannot unpack " + image + " into " + dest + ": it already exists");
    if (errno != ENOENT)
        throw_cannot("unpack " + image + " into", dest, errno);
    const std::string parent = split_parent(dest).first;
    if (stat(parent.c_str(), &st) != 0)
        throw_cannot("unpack " + image + " into", dest, errno);
    if (!S_ISDIR(st.st_mode))
        throw_cannot("unpack " + image + " into", dest, ENOTDIR);
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
    const CapturedRun child = run_capturing(options, on_stdout);
    if (!exited_ok(child.status))
        throw Error("cannot unpack " + image + ": " + describe_failure("unsquashfs", child.status, child.output));
}

void unpack_image(const std::string& image, const std::string& dest)
{
    run_unsquashfs(image, {"-no-progress", "-quiet", "-no-xattrs", "-d", not_an_option(dest)});
}

// The unsquashfs on PATH must be one that keeps a crafted image's entries
// inside the destination: its version is all there is to go by.
void check_unsquashfs_version()
{
    const policy::Verdict verdict = policy::unsquashfs_usable(run_capturing({"unsquashfs", "-version"}).output);
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
    std::uint64_t bytes = 0;  // regular files, logical sizes
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

// Walks what unsquashfs wrote (walk_tree: never following a symlink, a
// bounded number of descriptors at any depth) and applies the rules
// extract_tar applies before writing.  unsquashfs cannot be told to leave
// devices out or to strip bits, so this happens afterwards; dest is private
// to the job until the caller renames it into place.
class TreeCheck {
public:
    TreeCheck(const std::string& image, const std::string& dest, ExtractBudget& budget)
        : image_(image), dest_(dest), budget_(budget)
    {
    }

    ExtractStats run()
    {
        Fd root(open(dest_.c_str(), kDirFlags));
        if (root.get() < 0)
            throw_cannot("read", shown_path(dest_), errno);
        // One thread: the budget, the hard-link set and the counts are this
        // object's alone.
        walk_tree(root.get(), dest_, 1, [this](const FoundEntry& e) { check(e); });
        return stats_;
    }

private:
    void check(const FoundEntry& e)
    {
        const struct stat& st = e.st;
        const mode_t type = st.st_mode & S_IFMT;
        check_type(type, e.path, image_);
        budget_.add_entries(1, image_);
        ++stats_.entries;
        if (type == S_IFLNK) {
            check_symlink(e.path, std::string(parent_in_tree(e.path)), read_link(e), image_);
            return;
        }
        if ((st.st_mode & kSpecialBits) != 0) {
            // Not a symlink (checked above), so following is harmless.
            if (fchmodat(e.dir_fd, e.name, st.st_mode & 0777, 0) != 0)
                throw_cannot("change the mode of", shown_path(join_path(dest_, e.path)), errno);
            ++stats_.stripped;
        }
        if (type == S_IFREG && first_sight(st)) {
            budget_.add_bytes(static_cast<std::uint64_t>(st.st_size), image_);
            stats_.bytes += static_cast<std::uint64_t>(st.st_size);
        }
    }

    // Hard-linked files hold their data once.
    bool first_sight(const struct stat& st) { return st.st_nlink < 2 || seen_.insert({st.st_dev, st.st_ino}).second; }

    std::string read_link(const FoundEntry& e) const
    {
        std::vector<char> buf(PATH_MAX + 1);
        const ssize_t n = readlinkat(e.dir_fd, e.name, buf.data(), buf.size());
        if (n < 0)
            throw_cannot("read the symlink", shown_path(join_path(dest_, e.path)), errno);
        if (static_cast<std::size_t>(n) == buf.size())
            refuse(e.path, image_, "its symlink target is longer than PATH_MAX");
        return std::string(buf.data(), static_cast<std::size_t>(n));
    }

    const std::string& image_;
    const std::string& dest_;
    ExtractBudget& budget_;  // counted once more, now from what is on disk
    std::set<std::pair<dev_t, ino_t>> seen_;
    ExtractStats stats_;
};

}  // namespace

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

namespace {
// Moves every entry of `from` into `into`, descending where both hold a
// directory; a name both hold otherwise was in two images.  By fd, never
// following a symlink.
// A directory the merge renames out of or into must let its owner write
// and search it for a while: an image keeps its tree's modes (a 0555
// directory too).  Returns the mode to put back.
mode_t open_up(int dir, const std::string& shown)
{
    struct stat st {};
    if (::fstat(dir, &st) != 0)
        throw_cannot("examine", shown, errno);
    const mode_t mode = st.st_mode & 07777;
    if ((mode & 0300) != 0300 && ::fchmod(dir, mode | 0300) != 0)
        throw_cannot("change the mode of", shown, errno);
    return mode;
}

void merge_into(int from, int into, const std::string& shown, const std::string& image, const std::string& rel = "")
{
    open_up(from, shown);
    const mode_t kept = open_up(into, shown);
    DirStream entries(from);
    if (!entries.valid())
        throw_cannot("read", shown, errno);
    std::vector<std::string> names;
    while (const dirent* e = entries.next())
        names.emplace_back(e->d_name);
    if (entries.error() != 0)
        throw_cannot("read", shown, entries.error());
    for (const std::string& name : names) {
        // A directory moved to another parent must let its owner write it
        // (its ".." changes): opened up for the move, its mode put back.
        const Fd sub_from(::openat(from, name.c_str(), kDirFlags));
        const mode_t sub_mode = sub_from.valid() ? open_up(sub_from.get(), join_path(shown, name)) : 0;
        if (::renameat2(from, name.c_str(), into, name.c_str(), RENAME_NOREPLACE) == 0) {
            if (sub_from.valid() && ::fchmod(sub_from.get(), sub_mode) != 0)
                throw_cannot("change the mode of", join_path(shown, name), errno);
            continue;
        }
        if (errno != EEXIST)
            throw_cannot("move", join_path(shown, name), errno);
        const Fd sub_into(::openat(into, name.c_str(), kDirFlags));
        if (!sub_from.valid() || !sub_into.valid())
            throw Error(image + " holds " + quoted(rel + name) +
                        ", which an image before it in the set holds too: an image set must hold disjoint names");
        merge_into(sub_from.get(), sub_into.get(), join_path(shown, name), image, rel + name + "/");
    }
    if (::fchmod(into, kept) != 0)
        throw_cannot("change the mode of", shown, errno);
}
}  // namespace

ExtractStats extract_squashfs_set(const std::vector<std::string>& images, const std::string& dest,
                                  const std::string& scratch, ExtractBudget* budget)
{
    require_new_destination(images.empty() ? dest : images.front(), dest);
    ExtractBudget unlimited;
    ExtractBudget& counted = budget ? *budget : unlimited;
    ExtractStats all;
    try {
        if (::mkdir(dest.c_str(), 0700) != 0)
            throw_cannot("create", dest, errno);
        const Fd into(::open(dest.c_str(), kDirFlags));
        if (!into.valid())
            throw_cannot("open", dest, errno);
        for (std::size_t i = 0; i < images.size(); ++i) {
            const std::string unpacked = join_path(scratch, std::to_string(i));
            const ExtractStats one = extract_squashfs(images[i], unpacked, &counted);
            all.entries += one.entries;
            all.bytes += one.bytes;
            all.stripped += one.stripped;
            const Fd from(::open(unpacked.c_str(), kDirFlags));
            if (!from.valid())
                throw_cannot("open", unpacked, errno);
            merge_into(from.get(), into.get(), unpacked, images[i]);
            if (!remove_tree(unpacked).ok())
                throw Error("cannot remove " + unpacked);
        }
        return all;
    } catch (...) {
        for (std::size_t i = 0; i < images.size(); ++i)
            remove_tree(join_path(scratch, std::to_string(i)));
        if (!remove_tree(dest).ok())
            throw Error("cannot remove " + dest + " after a failed extraction");
        throw;
    }
}

}  // namespace dlstage::stager
