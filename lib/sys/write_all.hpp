// Writing a whole buffer to an fd: a pipe or a terminal may take it in
// parts, and a signal may interrupt a write.
#pragma once

#include <string_view>

namespace dlstage {

// Writes all of data to fd, retrying on EINTR and after partial writes.
// False when a write fails (errno says why; EIO if nothing was written).
bool write_all(int fd, std::string_view data);

}  // namespace dlstage
