// The archive entry rules (stager/extract/entry_rules.hpp) that keep a hostile tar
// or squashfs image inside its destination.  Input: a byte whose low four
// bits are a file type (st_mode >> 12), then PATH NUL TARGET.  What the rules accept must
// really stay inside: the normalized path is relative and plain, and a
// symlink's target, resolved lexically from its directory, never climbs
// above the destination.
#include <algorithm>
#include <functional>
#include <sys/stat.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "stager/extract/entry_rules.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace dlstage;
using namespace dlstage::stager;
using fuzz::expect;

namespace {
// Refused, as an unsafe entry named in the message.
bool refused(const std::function<void()>& check, std::string_view about)
{
    std::string message;
    if (!fuzz::refuses(check, about, &message))
        return false;
    expect(starts_with(message, "unsafe entry '"), "a refusal names the entry", message);
    return true;
}

void check_path(const std::string& path)
{
    std::string normalized;
    const PathIssue issue = inside_path(path, normalized);
    const auto parts = split(path, '/');
    const bool has_dot_dot = std::find(parts.begin(), parts.end(), "..") != parts.end();
    if (issue == PathIssue::absolute) {
        expect(!path.empty() && path.front() == '/', "only a path starting with '/' is absolute", path);
        return;
    }
    expect(path.empty() || path.front() != '/', "a path starting with '/' is absolute", path);
    if (issue != PathIssue::none) {
        expect(has_dot_dot, "only '..' makes a relative path an issue", path);
        return;
    }
    expect(!has_dot_dot, "a path with '..' is an issue", path);
    if (!normalized.empty()) {
        expect(normalized.front() != '/', "a normalized path is relative", path);
        for (const std::string& part : split(normalized, '/'))
            expect(!part.empty() && part != "." && part != "..", "a normalized path is plain", path);
        expect(starts_with(normalized, parent_in_tree(normalized)), "the parent is a prefix", path);
    }
    const auto slashes = static_cast<std::size_t>(std::count(normalized.begin(), normalized.end(), '/'));
    expect(depth_of(normalized) == (normalized.empty() ? 0 : 1 + slashes), "depth counts the components", path);
    std::string again;
    expect(inside_path(normalized, again) == PathIssue::none && again == normalized, "normalizing is idempotent", path);
}

// Resolves target from dir (both relative to the destination) lexically;
// false if it climbs above the destination.
bool stays_inside(const std::string& dir, const std::string& target)
{
    long depth = static_cast<long>(depth_of(dir));
    for (const std::string& part : split(target, '/')) {
        if (part.empty() || part == ".")
            continue;
        depth += part == ".." ? -1 : 1;
        if (depth < 0)
            return false;
    }
    return true;
}

void check_link(const std::string& path, const std::string& target)
{
    std::string normalized;
    if (inside_path(path, normalized) != PathIssue::none || normalized.empty())
        return;
    const std::string dir(parent_in_tree(normalized));
    if (refused([&] { check_symlink(path, dir, target, "fuzz.tar"); }, target))
        return;
    expect(!target.empty() && target.front() != '/', "an accepted target is relative", target);
    expect(stays_inside(dir, target), "an accepted target stays inside the destination", path + " -> " + target);
    // '..' only before the first name: resolved through other accepted links
    // it still cannot leave.
    bool after_name = false;
    for (const std::string& part : split(target, '/')) {
        if (part.empty() || part == ".")
            continue;
        expect(!(after_name && part == ".."), "no '..' after a name", target);
        after_name = after_name || part != "..";
    }
}

void check_types(std::uint8_t selector, const std::string& path)
{
    const mode_t type = static_cast<mode_t>(selector & 0xf) << 12;
    const bool allowed = type == S_IFREG || type == S_IFDIR || type == S_IFLNK;
    expect(refused([&] { check_type(type, path, "fuzz.tar"); }, path) != allowed,
           "only files, directories and symlinks are accepted", path);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const auto in = fuzz::fields(fuzz::text_of(data + 1, size - 1), 2);
    check_path(in[0]);
    check_path(in[1]);
    check_link(in[0], in[1]);
    check_types(data[0], in[0]);
    return 0;
}
