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

constexpr FormatTraits kFormats[] = {
    {Format::Auto, "auto", "", true},
    {Format::Dir, "dir", "", true},
    {Format::File, "file", "", true},
    {Format::Tar, "tar", "tar shards", false},
    {Format::Squashfs, "squashfs", "squashfs images", true},
};

const Suffix* suffix_of(std::string_view name)
{
    for (const Suffix& suffix : kSuffixes)
        if (ends_with(name, suffix.text))
            return &suffix;
    return nullptr;
}
}  // namespace

const FormatTraits& traits_of(Format format)
{
    for (const FormatTraits& traits : kFormats)
        if (traits.format == format)
            return traits;
    // A value no line names (none today): "?" for its name, as to_string
    // said before; one constant, not the first caller's value kept.
    static const FormatTraits unknown{Format::Auto, "?", "", true};
    return unknown;
}

const NameTable<Format>& format_names()
{
    static const NameTable<Format> names = [] {
        NameTable<Format> table;
        for (const FormatTraits& traits : kFormats)
            table.emplace_back(traits.name, traits.format);
        return table;
    }();
    return names;
}

std::string to_string(Format format)
{
    return traits_of(format).name;
}

bool comes_in_parts(Format format)
{
    return *traits_of(format).parts != '\0';
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
    return is_glob(source) && comes_in_parts(known);
}

Format format_from_name(std::string_view source)
{
    if (const Suffix* suffix = suffix_of(source))
        return suffix->format;
    return is_glob(source) ? Format::Tar : Format::Auto;
}

}  // namespace dlstage
