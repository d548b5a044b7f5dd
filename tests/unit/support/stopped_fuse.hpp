// A FUSE mount whose server is stopped (SIGSTOP), as a user leaves one
// behind: anything that asks its file system (a stat, an open, a lookup
// inside) blocks until the server runs again.  squashfuse serves a small
// squashfs image made with mksquashfs.  Use it only inside a private mount
// namespace (test::in_mount_namespace), as root.
#pragma once

#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <string>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/sys/mount_table.hpp"
#include "tests/unit/support/in_child.hpp"

namespace dlstage::test {

class StoppedFuse {
public:
    // Serves a squashfs image of `content` (a directory) on `point`; with
    // `allow_other`, to every user (as a user's mount in their own directory
    // is to themselves): without it FUSE refuses other users at once.
    StoppedFuse(const std::string& content, const std::string& image, const std::string& point,
                bool allow_other = false)
        : point_(point)
    {
        if (std::system(("mksquashfs '" + content + "' '" + image + "' -quiet -no-progress -noappend >/dev/null 2>&1")
                            .c_str()) != 0) {
            problem = "skip: mksquashfs failed (squashfs-tools installed?)";
            return;
        }
        server_ = ::fork();
        if (server_ == 0) {
            // Dies with the test's child even if that one crashes before its
            // destructors: a stopped server left behind would hold the mount.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            const int null = ::open("/dev/null", O_RDWR);
            ::dup2(null, 1);
            ::dup2(null, 2);
            if (allow_other)
                ::execlp("squashfuse", "squashfuse", "-f", "-o", "allow_other", image.c_str(), point.c_str(),
                         static_cast<char*>(nullptr));
            else
                ::execlp("squashfuse", "squashfuse", "-f", image.c_str(), point.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 500 && !MountTable::current().at(point).has_value(); ++i)
            ::usleep(10000);
        if (!MountTable::current().at(point).has_value()) {
            problem = "skip: squashfuse did not mount (squashfuse and /dev/fuse here?)";
            return;
        }
        ::kill(server_, SIGSTOP);
        // Stopped means every thread stopped: one still running could take
        // the next request and leave its caller waiting past SIGKILL.
        for (int i = 0; i < 500 && !all_threads_stopped(); ++i)
            ::usleep(10000);
    }
    ~StoppedFuse()
    {
        if (server_ > 0) {
            ::kill(server_, SIGKILL);
            ::waitpid(server_, nullptr, 0);
        }
        ::umount2(point_.c_str(), MNT_DETACH);
    }
    StoppedFuse(const StoppedFuse&) = delete;
    StoppedFuse& operator=(const StoppedFuse&) = delete;

    std::string problem;  // "skip: ..." when no FUSE mount could be made

private:
    bool all_threads_stopped() const
    {
        const std::string tasks = "/proc/" + std::to_string(server_) + "/task";
        DIR* dir = ::opendir(tasks.c_str());
        if (!dir)
            return false;
        bool stopped = true;
        while (const dirent* e = ::readdir(dir)) {
            if (e->d_name[0] == '.')
                continue;
            std::ifstream in(tasks + "/" + e->d_name + "/stat");
            std::string stat;
            std::getline(in, stat);
            const std::size_t close = stat.rfind(')');
            stopped = stopped && close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T';
        }
        ::closedir(dir);
        return stopped;
    }

    std::string point_;
    pid_t server_ = -1;
};

// Runs fn in a private mount namespace while a stopped server serves a
// squashfs image of `content` on `point`; "skip: ..." if that cannot be had.
inline std::string with_stopped_fuse(const std::string& content, const std::string& image, const std::string& point,
                                     const std::function<std::string()>& fn, bool allow_other = false)
{
    return in_mount_namespace([&] {
        StoppedFuse fuse(content, image, point, allow_other);
        return fuse.problem.empty() ? fn() : fuse.problem;
    });
}

}  // namespace dlstage::test
