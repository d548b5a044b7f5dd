#include "pack/tar_shards.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <unistd.h>

#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"
#include "pack/output_files.hpp"
#include "pack/shard_writer.hpp"

namespace dlstage::pack {

namespace {
std::string shard_name(const std::string& prefix, std::size_t index)
{
    char number[32];
    std::snprintf(number, sizeof number, "%06zu", index);
    return prefix + "-" + number + ".tar";
}
}  // namespace

ShardLayout shard_layout_for(const PackTree& tree, std::size_t shard_count, std::uint64_t max_shard_bytes)
{
    if (shard_count)
        return lay_out_shards_by_count(tree.entries, shard_count);
    return lay_out_shards_by_size(tree.entries, max_shard_bytes);
}

std::vector<std::string> existing_shards(const std::string& prefix)
{
    const auto [dir, base] = split_parent(prefix);
    const std::string lead = base + "-";
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

TarShards write_tar_shards(const std::string& dir, const std::string& prefix, const PackTree& tree,
                           const ShardLayout& layout, const std::vector<std::string>& old_shards,
                           const PackProgress& progress)
{
    TarShards written;
    std::vector<std::string>& finals = written.paths;
    std::vector<std::string> temporaries;
    for (std::size_t s = 0; s < layout.shards.size(); ++s) {
        finals.push_back(shard_name(prefix, s));
        temporaries.push_back(temporary_name(finals.back()));
    }
    const Temporaries temporary(temporaries);
    std::vector<char> buffer(1 << 20);
    std::uint64_t bytes_so_far = 0, files_so_far = 0;
    const MemberWritten member_written = [&](const PackEntry& member) {
        if (member.type == PackEntryType::Dir)
            return;
        files_so_far += 1;
        bytes_so_far += member.type == PackEntryType::File ? member.size : 0;
        if (progress)
            progress(bytes_so_far, files_so_far);
    };
    for (std::size_t s = 0; s < layout.shards.size(); ++s)
        write_shard(dir, tree, layout.shards[s], temporary[s], buffer, member_written);

    // Only a complete set gets the final names: a pack that fails halfway
    // leaves no shards that look like a whole dataset.
    written.smallest = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t s = 0; s < finals.size(); ++s) {
        const std::uint64_t bytes = file_size(temporary[s]);
        written.smallest = std::min(written.smallest, bytes);
        written.largest = std::max(written.largest, bytes);
        rename_into_place(temporary[s], finals[s]);
    }
    // Shards of an earlier, larger pack would be staged with the new ones.
    for (const std::string& old : old_shards)
        if (std::find(finals.begin(), finals.end(), old) == finals.end() && unlink(old.c_str()) != 0)
            throw_cannot("remove the old shard", shown_path(old), errno);
    return written;
}

}  // namespace dlstage::pack
