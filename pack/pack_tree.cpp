#include "pack/pack_tree.hpp"

#include <algorithm>
#include <sys/stat.h>

#include "lib/sys/dataset_walk.hpp"

namespace dlstage::pack {

namespace {
void add_entry(PackTree& tree, const std::string& rel, const struct stat& st)
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
}  // namespace

PackTree read_pack_tree(const std::string& dir)
{
    PackTree tree;
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0)
        tree.newest_mtime = st.st_mtim.tv_sec;
    for (const WalkedEntry& walked : walk_dataset(dir))
        add_entry(tree, walked.path, walked.st);
    return tree;
}

}  // namespace dlstage::pack
