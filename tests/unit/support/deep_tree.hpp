// A directory tree far deeper than PATH_MAX or the fd limit allows by path,
// for the tree removal tests.
#pragma once

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace dlstage::test {

// Builds `levels` nested directories named `name` below top, a file at the
// bottom, through fds: the full path is far longer than PATH_MAX.
inline void make_deep_tree(const std::string& top, int levels, const std::string& name)
{
    int fd = ::open(top.c_str(), O_RDONLY | O_DIRECTORY);
    BOOST_REQUIRE(fd >= 0);
    for (int i = 0; i < levels; ++i) {
        BOOST_REQUIRE(::mkdirat(fd, name.c_str(), 0755) == 0);
        const int next = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
        ::close(fd);
        BOOST_REQUIRE(next >= 0);
        fd = next;
    }
    const int file = ::openat(fd, "bottom", O_WRONLY | O_CREAT, 0644);
    BOOST_REQUIRE(file >= 0);
    ::close(file);
    ::close(fd);
}

}  // namespace dlstage::test
