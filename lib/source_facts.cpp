#include "lib/source_facts.hpp"

#include <cerrno>
#include <cstring>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/dataset_format.hpp"

namespace dlstage {

namespace {
SourceFacts failure(int err, const std::string& path)
{
    SourceFacts facts;
    facts.state = err == ENOENT || err == ENOTDIR ? SourceFacts::State::Missing : SourceFacts::State::Unreadable;
    facts.problem = path + ": " + std::strerror(err);
    return facts;
}

SourceFacts probe_shards(const std::string& pattern)
{
    glob_t matches{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    if (rc != 0) {
        globfree(&matches);
        if (rc == GLOB_NOMATCH)
            return failure(ENOENT, pattern);
        return failure(errno ? errno : EIO, pattern);
    }
    SourceFacts facts;
    facts.format = Format::Tar;
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        struct stat st {};
        if (stat(matches.gl_pathv[i], &st) != 0 || access(matches.gl_pathv[i], R_OK) != 0) {
            const std::string shard = matches.gl_pathv[i];
            globfree(&matches);
            return failure(errno, shard);
        }
        bytes += static_cast<std::uint64_t>(st.st_size);
    }
    globfree(&matches);
    facts.bytes = bytes;  // shard bytes; the files inside stay unknown
    return facts;
}
}  // namespace

SourceFacts probe_source(const Dataset& dataset)
{
    const Format known = dataset.known_format();
    if (known == Format::Tar && is_glob(dataset.source))
        return probe_shards(dataset.source);

    struct stat st {};
    if (stat(dataset.source.c_str(), &st) != 0)
        return failure(errno, dataset.source);
    // access() answers for the real uid: the user running the command, or
    // the submitting user in sbatch.  Root code must not rely on it.
    if (access(dataset.source.c_str(), S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) != 0)
        return failure(errno, dataset.source);

    SourceFacts facts;
    if (S_ISDIR(st.st_mode)) {
        facts.format = known == Format::Auto ? Format::Dir : known;
        return facts;  // a tree: size unknown without a walk
    }
    facts.format = known == Format::Auto ? Format::File : known;
    facts.bytes = static_cast<std::uint64_t>(st.st_size);
    if (facts.format != Format::Tar)
        facts.files = 1;
    return facts;
}

}  // namespace dlstage
