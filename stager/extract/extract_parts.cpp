#include "stager/extract/extract_parts.hpp"

#include "lib/error.hpp"
#include "stager/extract/parallel_extract.hpp"

namespace dlstage::stager {

ExtractStats extract_parts(Format format, const std::vector<std::string>& parts, const std::string& dest,
                           const std::string& scratch, unsigned threads, const std::function<void()>& clear_dest,
                           ExtractBudget& budget)
{
    switch (format) {
    case Format::Squashfs:
        // An image set: each unpacked beside the images, then merged.
        return parts.size() == 1 ? extract_squashfs(parts.front(), dest, &budget)
                                 : extract_squashfs_set(parts, dest, scratch, &budget);
    case Format::Tar: return extract_shards(parts, dest, threads, clear_dest, budget).stats;
    default: throw Error("a dataset of format " + to_string(format) + " is not unpacked: it is staged as it is");
    }
}

bool unpacks_into_existing_dir(Format format)
{
    return format == Format::Tar;
}

bool extracts_part_by_part(Format format)
{
    return format == Format::Tar;
}

ExtractStats extract_part(Format format, const std::string& part, const std::string& dest, ShardOutcome& outcome,
                          ExtractBudget& budget)
{
    if (!extracts_part_by_part(format))
        throw Error("the parts of a dataset of format " + to_string(format) + " are unpacked all together");
    return extract_tar(part, dest, &outcome, &budget);
}

}  // namespace dlstage::stager
