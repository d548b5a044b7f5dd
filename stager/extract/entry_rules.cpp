#include "stager/extract/entry_rules.hpp"

#include <sys/stat.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"

namespace dlstage::stager {

void refuse(const std::string& entry, const std::string& source, const std::string& why)
{
    throw Error("unsafe entry " + quoted(entry) + " in " + source + ": " + why);
}

PathIssue inside_path(const std::string& path, std::string& normalized)
{
    normalized.clear();
    if (!path.empty() && path.front() == '/')
        return PathIssue::absolute;
    int depth = 0;
    bool dot_dot = false;
    for (const std::string& part : split(path, '/')) {
        if (part.empty() || part == ".")
            continue;
        if (part == "..") {
            if (--depth < 0)
                return PathIssue::leaves;
            dot_dot = true;
            continue;
        }
        ++depth;
        normalized += normalized.empty() ? part : "/" + part;
    }
    return dot_dot ? PathIssue::dot_dot : PathIssue::none;
}

std::size_t depth_of(const std::string& normalized_dir)
{
    if (normalized_dir.empty())
        return 0;
    return split(normalized_dir, '/').size();
}

void check_symlink(const std::string& entry, const std::string& link_dir, const std::string& target,
                   const std::string& source)
{
    const std::string what = "it is a symlink to " + quoted(target);
    if (target.empty())
        refuse(entry, source, "it is a symlink with an empty target");
    if (target.front() == '/')
        refuse(entry, source, what + ", an absolute path");
    std::size_t depth = depth_of(link_dir);
    bool after_name = false;
    for (const std::string& part : split(target, '/')) {
        if (part.empty() || part == ".")
            continue;
        if (part != "..") {
            after_name = true;
        } else if (after_name) {
            refuse(entry, source, what + ", which has '..' after a name; use a plain relative target");
        } else if (depth-- == 0) {
            refuse(entry, source, what + ", which leaves the destination");
        }
    }
}

void check_type(mode_t type, const std::string& entry, const std::string& source)
{
    const char* what = nullptr;
    switch (type) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK: return;
    case S_IFCHR:
    case S_IFBLK: what = "a device node"; break;
    case S_IFIFO: what = "a fifo"; break;
    case S_IFSOCK: what = "a socket"; break;
    default: what = "of an unknown type"; break;
    }
    refuse(entry, source, std::string("it is ") + what + "; datasets hold only files, directories and links");
}

std::string join_path(const std::string& dest, const std::string& normalized)
{
    if (normalized.empty())
        return dest;
    return dest.back() == '/' ? dest + normalized : dest + "/" + normalized;
}

}  // namespace dlstage::stager
