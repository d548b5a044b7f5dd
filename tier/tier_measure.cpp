#include "tier/tier_measure.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/statvfs.h>

#include "lib/error.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/mount_table.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
TierSpace space_of(const struct statvfs& fs)
{
    TierSpace space;
    space.total_bytes = static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize;
    space.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (fs.f_files > 0) {
        space.free_inodes = fs.f_favail;
        space.total_inodes = fs.f_files;
    }
    return space;
}
}  // namespace

TierSpace measure_tier_space(const std::string& dir)
{
    struct statvfs fs {};
    if (statvfs(dir.c_str(), &fs) != 0)
        throw_cannot("check free space of", dir, errno);
    return space_of(fs);
}

TierSpace measure_tier_space(int dir_fd, const std::string& shown)
{
    struct statvfs fs {};
    if (fstatvfs(dir_fd, &fs) != 0)
        throw_cannot("check free space of", shown, errno);
    return space_of(fs);
}

bool has_own_file_system(const std::string& root)
{
    const Fd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    const std::string real = dir.valid() ? kernel_path(dir.get()) : std::string();
    if (real.empty())
        return false;
    try {
        return MountTable::current().at(real).has_value();
    } catch (const Error&) {
        return false;
    }
}

}  // namespace dlstage
