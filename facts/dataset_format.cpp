#include "facts/dataset_format.hpp"

#include "lib/strings.hpp"

namespace dlstage {

namespace {
struct Suffix {
    std::string_view text;
    Format format;
};

// ".tar.gz" before ".tar": the first match is the whole suffix.
constexpr Suffix kSuffixes[] = {{".tar.gz", Format::Tar},    {".tar.zst", Format::Tar},      {".tar.xz", Format::Tar},
                                {".tar.bz2", Format::Tar},   {".tgz", Format::Tar},          {".tar", Format::Tar},
                                {".sqfs", Format::Squashfs}, {".squashfs", Format::Squashfs}};

const Suffix* suffix_of(std::string_view name)
{
    for (const Suffix& suffix : kSuffixes)
        if (ends_with(name, suffix.text))
            return &suffix;
    return nullptr;
}
}  // namespace

std::string to_string(Format format)
{
    switch (format) {
    case Format::Auto: return "auto";
    case Format::Dir: return "dir";
    case Format::File: return "file";
    case Format::Tar: return "tar";
    case Format::Squashfs: return "squashfs";
    }
    return "?";
}

bool is_glob(std::string_view path)
{
    return path.find_first_of("*?[") != std::string_view::npos;
}

std::string_view archive_suffix(std::string_view name)
{
    const Suffix* suffix = suffix_of(name);
    return suffix ? suffix->text : std::string_view();
}

bool is_part_glob(std::string_view source, Format known)
{
    return is_glob(source) && (known == Format::Tar || known == Format::Squashfs);
}

Format format_from_name(std::string_view source)
{
    if (const Suffix* suffix = suffix_of(source))
        return suffix->format;
    return is_glob(source) ? Format::Tar : Format::Auto;
}

}  // namespace dlstage
