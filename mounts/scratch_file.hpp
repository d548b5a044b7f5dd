// An unlinked temporary file for a child's output, read back later.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::mounts {

// An unlinked temporary file: a child's output we read back later, which
// (unlike a pipe) never stops the child once we stop reading.
class ScratchFile {
public:
    ScratchFile()
    {
        const char* dir = std::getenv("TMPDIR");
        std::string path = std::string(dir && *dir ? dir : "/tmp") + "/dlstage-XXXXXX";
        fd_ = Fd(mkostemp(path.data(), O_CLOEXEC | O_APPEND));
        if (!fd_.valid())
            throw_cannot("create a temporary file in", path.substr(0, path.rfind('/')), errno);
        unlink(path.c_str());
    }
    int fd() const { return fd_.get(); }
    std::string text() const
    {
        std::string all;
        char buf[4096];
        ssize_t n;
        for (off_t at = 0; (n = pread(fd_.get(), buf, sizeof buf, at)) > 0; at += n)
            all.append(buf, static_cast<std::size_t>(n));
        return all;
    }

private:
    Fd fd_;
};

}  // namespace dlstage::mounts
