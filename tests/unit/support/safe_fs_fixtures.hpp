// Tiers, trees and outcomes for the tests of tier/safe_fs (test_safe_fs.cpp:
// preparing and opening job directories; test_safe_fs_remove.cpp: removing
// and unmounting).
#pragma once

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <regex>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/support/files.hpp"
#include "tests/unit/support/removal_outcome.hpp"
#include "tests/unit/support/tmpdir.hpp"
#include "tier/safe_fs.hpp"

namespace dlstage::test {

inline constexpr uid_t kOtherUid = 12345;
inline constexpr gid_t kOtherGid = 23456;

inline bool is_root()
{
    return geteuid() == 0;
}

inline struct stat lstat_of(const std::string& path)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        BOOST_FAIL("lstat " + path + ": " + std::strerror(errno));
    return st;
}

inline bool is_real_dir(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

inline mode_t mode_of(const std::string& path)
{
    return lstat_of(path).st_mode & 07777;
}

inline void make_dir(const std::string& path, mode_t mode = 0755)
{
    if (::mkdir(path.c_str(), mode) != 0)
        BOOST_FAIL("mkdir " + path + ": " + std::strerror(errno));
}

inline void make_file(const std::string& path, const std::string& content = "data")
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        BOOST_FAIL("create " + path + ": " + std::strerror(errno));
    BOOST_REQUIRE(::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()));
    ::close(fd);
}

inline void make_link(const std::string& target, const std::string& path)
{
    if (::symlink(target.c_str(), path.c_str()) != 0)
        BOOST_FAIL("symlink " + path + ": " + std::strerror(errno));
}

inline int entries_in(const std::string& path)
{
    int n = 0;
    DIR* dir = ::opendir(path.c_str());
    BOOST_REQUIRE(dir);
    while (const dirent* e = ::readdir(dir))
        n += std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0;
    ::closedir(dir);
    return n;
}

// "Ready" or "Failed: PROBLEM", then one line per repair, with the time
// and pid of a moved-aside name replaced by X so outcomes compare whole.
inline std::string outcome(const PrepareResult& result)
{
    std::string text = result.ok() ? "Ready" : "Failed: " + result.problem;
    for (const std::string& repair : result.repairs)
        text += "\n" + repair;
    static const std::regex stamp(R"(\.untrusted-[0-9TZ]+-[0-9]+(-[0-9]+)?)");
    return std::regex_replace(text, stamp, ".untrusted-X");
}

// A tier root inside a temporary directory.
struct TierDir {
    test::TempDir tmp;
    std::string root = tmp / "tier";
    TierDir() { make_dir(root); }
};

// Sets the umask for one scope: the modes must not depend on the caller's.
struct Umask {
    mode_t old;
    explicit Umask(mode_t mask) : old(::umask(mask)) {}
    ~Umask() { ::umask(old); }
};

}  // namespace dlstage::test
