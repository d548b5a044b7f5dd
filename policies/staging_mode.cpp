#include "policies/staging_mode.hpp"

#include "lib/strings.hpp"

namespace dlstage::policy {

bool walks_while_transferring(const WalkFacts& facts)
{
    const bool tier_takes = facts.scope == Scope::Shared ? !facts.copy_there : facts.cleanup == Cleanup::JobEnd;
    return facts.mode == Mode::Copy && tier_takes && facts.source_is_dir && !facts.has_manifest;
}

bool mode_takes(Mode mode, Format format, bool one_file)
{
    switch (mode) {
    case Mode::Copy: return true;
    case Mode::Extract: return format == Format::Tar || format == Format::Squashfs;
    case Mode::Mount: return format == Format::Squashfs && one_file;
    }
    return false;
}

Verdict mode_fits_declared_format(Mode mode, Format declared, bool part_glob)
{
    if (mode == Mode::Mount && declared == Format::Squashfs && part_glob)
        return Verdict::refuse("mode = \"mount\" mounts one squashfs image, not a glob of them; use mode = "
                               "\"extract\" (each image unpacked into one directory) or \"copy\"");
    if (mode_takes(mode, declared, true))
        return Verdict::allow();
    if (mode == Mode::Extract)
        return Verdict::refuse("mode = \"extract\" needs tar shards or a squashfs image; set format = \"tar\" or "
                               "\"squashfs\" if the source name does not show it");
    return Verdict::refuse("mode = \"mount\" needs a squashfs image (.sqfs); build one with 'dlstage pack'");
}

Verdict source_fits_format(const SourceShape& shape)
{
    if (shape.shard_dirs > 1)
        return Verdict::refuse(std::string(traits_of(shape.declared).parts) +
                               " must sit in one directory: " + quoted(shape.source));
    if (shape.is_dir && shape.declared != Format::Auto && shape.declared != Format::Dir)
        return Verdict::refuse(quoted(shape.source) + " is a directory, but the dataset's format is " +
                               to_string(shape.declared));
    return Verdict::allow();
}

Verdict mode_fits_source(Mode mode, Format found, bool one_file, const std::string& source)
{
    if (mode_takes(mode, found, one_file))
        return Verdict::allow();
    const std::string need = mode == Mode::Extract ? "mode = \"extract\" needs tar shards or a squashfs image"
                                                   : "mode = \"mount\" needs one squashfs image";
    return Verdict::refuse(need + ", but " + source + " is a " + to_string(found));
}

}  // namespace dlstage::policy
