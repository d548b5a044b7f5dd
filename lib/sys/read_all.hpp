// Reading a whole small file the caller has opened.
#pragma once

#include <cstddef>
#include <string>

namespace dlstage {

// Everything fd still holds, at most `limit` bytes.  Throws Error
// "cannot read SHOWN: ..." on a read error, and "SHOWN is larger than
// LIMIT bytes" past the limit.
std::string read_all(int fd, std::size_t limit, const std::string& shown);

}  // namespace dlstage
