// Files the unit tests read back: what a test wrote, and the source tree's
// own files (the example configuration, the docs).
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>

namespace dlstage::test {

// The whole content of a file; "" when it cannot be read, which the
// test's comparison then reports.
inline std::string content_of(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether PATH names anything, a dangling symlink too (lstat).
inline bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// A file of the source tree: make check exports top_srcdir; run by hand
// from the top of the tree, ".".
inline std::string source_path(const std::string& relative)
{
    const char* srcdir = std::getenv("top_srcdir");
    return std::string(srcdir ? srcdir : ".") + "/" + relative;
}

}  // namespace dlstage::test
