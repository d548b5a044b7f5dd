// Writing a file so that readers see the old content or the new, never
// half: the content goes into a temporary of a name nobody can guess,
// created exclusively (a link a user prepared is never written through),
// synced, then renamed over the old one.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace dlstage {

// NAME in the directory open as dir_fd (shown as `shown` in messages), with
// exactly `mode` whatever the umask.  Throws Error; no temporary is left.
void replace_file_at(int dir_fd, const std::string& shown, const std::string& name, std::string_view content,
                     mode_t mode);

}  // namespace dlstage
