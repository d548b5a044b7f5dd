// A temporary directory for one test, removed with everything in it.
#pragma once

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <ftw.h>
#include <unistd.h>

namespace dlstage::test {

class TempDir {
public:
    TempDir()
    {
        char pattern[] = "/tmp/dlstage-unit-XXXXXX";
        if (!mkdtemp(pattern))
            throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir()
    {
        nftw(
            path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
            FTW_DEPTH | FTW_PHYS);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

    // Writes a file below the directory and returns its path.
    std::string write(const std::string& name, const std::string& content) const
    {
        const std::string file = *this / name;
        std::ofstream(file) << content;
        return file;
    }

private:
    std::string path_;
};

}  // namespace dlstage::test
