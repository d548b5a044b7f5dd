#include "config/config_paths.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"

#ifndef DLSTAGE_SYSCONFDIR
#define DLSTAGE_SYSCONFDIR "/etc"
#endif

namespace dlstage {

std::string default_config_path()
{
    return std::string(DLSTAGE_SYSCONFDIR) + "/dlstage/dlstage.toml";
}

std::string choose_config_path(const std::string& explicit_path, bool allow_env)
{
    if (!explicit_path.empty())
        return explicit_path;
    if (allow_env) {
        for (const std::string& name : {std::string(kConfigVar), std::string(kJobEnvPrefix) + kConfigVar}) {
            const char* env = std::getenv(name.c_str());
            if (env && *env)
                return env;
        }
    }
    return default_config_path();
}

namespace {
bool trusted_owner(uid_t uid)
{
    return uid == 0 || uid == ::geteuid();
}

// Why one entry of the chain (what lstat said of it) is not trusted, or "".
std::string entry_problem(const std::string& path, const struct stat& st, const char* file_noun)
{
    const std::string what = file_noun ? file_noun + (" " + quoted(path)) : "directory " + quoted(path);
    const bool is_file = file_noun != nullptr;
    if (!trusted_owner(st.st_uid))
        return what + " belongs to uid " + std::to_string(st.st_uid) + "; make it root's (chown root " + path + ")";
    if (S_ISLNK(st.st_mode))
        return "";  // its target's chain is checked too
    if (is_file && !S_ISREG(st.st_mode))
        return what + " is not a regular file" +
               (S_ISDIR(st.st_mode) ? " but a directory: give the path of the TOML file" : "");
    const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_dir)
        return what + " is writable by group or others (mode " + octal_mode(st.st_mode) + "); run chmod go-w " + path;
    return "";
}

// Checks every prefix of an absolute path, "/" first, with lstat.
std::string chain_problem(const std::string& path, const char* file_noun)
{
    std::string prefix;
    const std::vector<std::string> parts = split(std::string_view(path).substr(1), '/');
    struct stat st {};
    if (::lstat("/", &st) != 0)
        return cannot("check", "/", errno);
    if (std::string p = entry_problem("/", st, nullptr); !p.empty())
        return p;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].empty())
            continue;
        prefix += "/" + parts[i];
        if (::lstat(prefix.c_str(), &st) != 0) {
            // A missing file is for the loader to report ("cannot read").
            if (errno == ENOENT)
                return "";
            return cannot("check", quoted(prefix), errno);
        }
        if (std::string p = entry_problem(prefix, st, i + 1 == parts.size() ? file_noun : nullptr); !p.empty())
            return p;
    }
    return "";
}
}  // namespace

std::string untrusted_config_reason(const std::string& given)
{
    return untrusted_file_reason(given, "configuration file");
}

std::string untrusted_file_reason(const std::string& given, const char* noun)
{
    if (given.empty())
        return std::string("the ") + noun + "'s path is empty";
    std::string path = given;
    if (path.front() != '/') {  // a command line's: below the working directory, which counts too
        char cwd[PATH_MAX];
        if (!::getcwd(cwd, sizeof cwd))
            return cannot("tell", "the working directory", errno);
        path = std::string(cwd) + "/" + path;
    }
    if (std::string p = chain_problem(path, noun); !p.empty())
        return p;
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real))
        return errno == ENOENT ? "" : cannot("resolve", quoted(path), errno);
    return real == path ? "" : chain_problem(real, noun);
}

Config load_trusted_config(const std::string& path)
{
    if (std::string problem = untrusted_config_reason(path); !problem.empty())
        throw Error("refusing the site configuration: " + problem +
                    " (anyone who can change it could make root create or remove files anywhere)");
    return load_config(path);
}

Config load_config_for_caller(const std::string& path)
{
    return ::geteuid() == 0 ? load_trusted_config(path) : load_config(path);
}

}  // namespace dlstage
