// May this unsquashfs unpack images that come from users?  Versions before
// 4.5.1 can be made to write outside the destination by a crafted image
// (CVE-2021-40153 and CVE-2021-41072, both fixed upstream in 4.5.1).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "policies/verdict.hpp"

namespace dlstage::policy {

struct ToolVersion {
    unsigned major = 0, minor = 0, patch = 0;
    std::string text;  // as printed, e.g. "4.4-git"
};

// From `unsquashfs -version`: "unsquashfs version 4.5.1 (2022/03/17)".
// Nothing when the first line has no "version X.Y[.Z]".
std::optional<ToolVersion> parse_unsquashfs_version(std::string_view output);

// Refuses an unsquashfs older than 4.5.1, or one whose version cannot be
// told, naming what was found and what to install.
Verdict unsquashfs_usable(std::string_view version_output);

}  // namespace dlstage::policy
