#include "policies/unsquashfs.hpp"

#include <cctype>
#include <tuple>

#include "lib/strings.hpp"

namespace dlstage::policy {

namespace {
const ToolVersion kFixed{4, 5, 1, "4.5.1"};

const std::string kRemedy =
    "install squashfs-tools >= " + kFixed.text + " on the compute nodes, or stage the image with mode = \"mount\"";

// Reads the digits at pos into value; false if there are none or too many.
bool read_number(std::string_view text, std::size_t& pos, unsigned& value)
{
    const std::size_t start = pos;
    value = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) && pos - start < 6)
        value = value * 10 + static_cast<unsigned>(text[pos++] - '0');
    return pos > start && (pos == text.size() || !std::isdigit(static_cast<unsigned char>(text[pos])));
}

bool before(const ToolVersion& a, const ToolVersion& b)
{
    return std::tie(a.major, a.minor, a.patch) < std::tie(b.major, b.minor, b.patch);
}
}  // namespace

std::optional<ToolVersion> parse_unsquashfs_version(std::string_view output)
{
    const std::string_view line = output.substr(0, output.find('\n'));
    const std::string_view marker = "version ";
    const std::size_t at = line.find(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    std::size_t pos = at + marker.size();
    const std::size_t start = pos;
    ToolVersion version;
    if (!read_number(line, pos, version.major) || pos >= line.size() || line[pos++] != '.' ||
        !read_number(line, pos, version.minor))
        return std::nullopt;
    if (pos + 1 < line.size() && line[pos] == '.' && std::isdigit(static_cast<unsigned char>(line[pos + 1])) &&
        !read_number(line, ++pos, version.patch))
        return std::nullopt;
    const std::size_t end = line.find(' ', pos);
    version.text = std::string(line.substr(start, end == std::string_view::npos ? end : end - start));
    return version;
}

Verdict unsquashfs_usable(std::string_view version_output)
{
    const auto version = parse_unsquashfs_version(version_output);
    if (!version)
        return Verdict::refuse("cannot tell the version of unsquashfs from " +
                               quoted(trim(version_output.substr(0, version_output.find('\n')))) +
                               " (unsquashfs -version), and only " + kFixed.text +
                               " or later unpacks crafted images safely; " + kRemedy);
    if (before(*version, kFixed))
        return Verdict::refuse("unsquashfs " + quoted(version->text) +
                               " can be made to write outside the destination by a crafted image "
                               "(CVE-2021-40153, CVE-2021-41072; fixed in " +
                               kFixed.text + "); " + kRemedy);
    return Verdict::allow();
}

}  // namespace dlstage::policy
