// Running a piece of a test in a forked child: as another user, with a
// lower fd limit, or in a private mount namespace, so that nothing of it
// touches the test process or the host.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <grp.h>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlstage::test {

constexpr uid_t kSameUid = static_cast<uid_t>(-1);  // in_child: do not switch user

// Runs fn in a forked child (as `uid`/`gid` if given and we are root) and
// returns what it returned: for what must not touch this process, such as a
// lower fd limit, another uid or a private mount namespace.
inline std::string in_child(const std::function<std::string()>& fn, uid_t uid = kSameUid, gid_t gid = 0)
{
    // Close-on-exec: a program the child starts (a FUSE server) must not
    // hold the pipe open after the child has gone.
    int pipe_fds[2];
    BOOST_REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(pipe_fds[0]);
        ::alarm(60);  // a test that hangs fails instead of holding up the run
        std::string text;
        try {
            if (uid != kSameUid && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
                text = std::string("cannot switch user: ") + std::strerror(errno);
            else
                text = fn();
        } catch (const std::exception& e) {
            text = std::string("exception: ") + e.what();
        }
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t n = ::write(pipe_fds[1], text.data() + done, text.size() - done);
            if (n <= 0)
                break;
            done += static_cast<std::size_t>(n);
        }
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0)
        text.append(buf, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "child ended abnormally: status " << status);
    return text;
}

// Runs fn in a child with a private mount namespace (nothing leaks to the
// host); "skip: ..." when that cannot be had here.
inline std::string in_mount_namespace(const std::function<std::string()>& fn)
{
    return in_child([&] {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return std::string("skip: ") + std::strerror(errno);
        return fn();
    });
}

// True, with a message, when a child's text says it could not set up what
// the test needs here ("skip: ...", e.g. no mount namespace).
inline bool skipped(const std::string& text)
{
    if (text.rfind("skip: ", 0) != 0)
        return false;
    BOOST_TEST_MESSAGE("skipped: " + text);
    return true;
}

// True, with a message, when the test cannot mount here (not root).
inline bool cannot_mount()
{
    if (geteuid() == 0)
        return false;
    BOOST_TEST_MESSAGE("skipped: mounting needs root");
    return true;
}

}  // namespace dlstage::test
