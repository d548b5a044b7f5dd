#include "dataset/source_probe.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <glob.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/manifest.hpp"
#include "facts/dataset_format.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/staging_mode.hpp"

namespace dlstage {

namespace {
SourceFacts failure(int err, const std::string& path)
{
    SourceFacts facts;
    facts.state = err == ENOENT || err == ENOTDIR ? SourceFacts::State::Missing : SourceFacts::State::Unreadable;
    facts.problem = cannot("read", shown_path(path), err);
    return facts;
}

// The source cannot be what the dataset declares (policy::source_fits_format).
SourceFacts unfit(const policy::Verdict& verdict)
{
    SourceFacts facts;
    facts.state = SourceFacts::State::Unfit;
    facts.problem = verdict.reason;
    return facts;
}

SourceFacts probe_shards(const std::string& pattern, Format format)
{
    const ShardMatches found = match_shards(pattern);
    if (found.err != 0 || found.paths.empty())
        return failure(found.err != 0 ? found.err : ENOENT, pattern);
    if (const policy::Verdict fits = policy::source_fits_format({pattern, format, false, found.directories()});
        !fits.allowed)
        return unfit(fits);
    SourceFacts facts;
    facts.format = format;
    std::uint64_t bytes = 0;
    for (const std::string& shard : found.paths) {
        struct stat st {};
        if (stat(shard.c_str(), &st) != 0 || faccessat(AT_FDCWD, shard.c_str(), R_OK, AT_EACCESS) != 0)
            return failure(errno, shard);
        bytes += static_cast<std::uint64_t>(st.st_size);
        facts.parts.push_back(static_cast<std::uint64_t>(st.st_size));
    }
    facts.bytes = bytes;  // shard bytes; the files inside stay unknown
    return facts;
}

// A tree's bytes and entries from its manifest: the header only (however
// many entries follow) and the stat of the root the caller made.  Only the
// root is compared here; the stager compares every directory before it
// plans from the manifest, and checks each file as it opens it.
void facts_from_manifest(const Dataset& dataset, const std::string& manifest_dir, const struct stat& root,
                         SourceFacts& facts)
{
    const std::string path = manifest_path(manifest_dir, dataset.name);
    struct stat st {};
    if (!dataset.from_catalog || manifest_dir.empty() || ::lstat(path.c_str(), &st) != 0)
        return;  // no manifest: as before manifests
    const std::string fallback = "sizes are checked when the job stages";
    if (const std::string why = untrusted_manifest_reason(path); !why.empty()) {
        facts.note = unused_manifest_line(dataset.name, why, fallback);
        return;
    }
    try {
        const ManifestHeader header = read_manifest_header(path);
        if (const std::string why = stale_at_root(header, dataset, root); !why.empty()) {
            facts.note = stale_manifest_line(dataset.name, why, fallback);
            return;
        }
        if (header.format != Format::Dir)
            return;  // a file or shards: the stat or glob told
        facts.bytes = header.bytes;
        facts.files = header.entries;
        facts.from_manifest = true;
    } catch (const Error& e) {
        facts.note = unused_manifest_line(dataset.name, e.what(), fallback);
    }
}
}  // namespace

std::set<std::string> ShardMatches::directory_paths() const
{
    std::set<std::string> dirs;
    for (const std::string& path : paths)
        dirs.insert(split_parent(path).first);
    return dirs;
}

std::size_t ShardMatches::directories() const
{
    return directory_paths().size();
}

ShardMatches match_shards(const std::string& pattern)
{
    ShardMatches found;
    glob_t matches{};
    const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &matches);
    if (rc == 0)
        found.paths.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
    else if (rc != GLOB_NOMATCH)
        found.err = errno ? errno : EIO;
    globfree(&matches);
    std::sort(found.paths.begin(), found.paths.end());
    return found;
}

SourceFacts probe_source(const Dataset& dataset, const std::string& manifest_dir)
{
    const Format known = dataset.known_format();
    if (is_part_glob(dataset.source, known))
        return probe_shards(dataset.source, known);

    struct stat st {};
    if (stat(dataset.source.c_str(), &st) != 0)
        return failure(errno, dataset.source);
    // For the effective ids: the user running the command, the submitting
    // user in sbatch, or the job's user whose identity the prolog's probing
    // child took while its real uid stays root's (tier/cache_entry.hpp).
    if (faccessat(AT_FDCWD, dataset.source.c_str(), S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK, AT_EACCESS) != 0)
        return failure(errno, dataset.source);

    if (const policy::Verdict fits = policy::source_fits_format({dataset.source, known, S_ISDIR(st.st_mode), 0});
        !fits.allowed)
        return unfit(fits);
    SourceFacts facts;
    if (S_ISDIR(st.st_mode)) {
        facts.format = known == Format::Auto ? Format::Dir : known;
        facts_from_manifest(dataset, manifest_dir, st, facts);
        return facts;  // a tree: size unknown without a walk or a manifest
    }
    facts.format = known == Format::Auto ? Format::File : known;
    facts.bytes = static_cast<std::uint64_t>(st.st_size);
    if (traits_of(facts.format).counted_as_one_file)
        facts.files = 1;
    return facts;
}

namespace {
// The newest ctime of `paths`; false when one cannot be read.
bool newest_ctime_of(const std::vector<std::string>& paths, std::int64_t& newest)
{
    for (const std::string& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) != 0)
            return false;
        newest = std::max<std::int64_t>(newest, st.st_ctim.tv_sec);
    }
    return true;
}
}  // namespace

SourceTimes source_times(const Dataset& dataset, const std::string& manifest_dir)
{
    SourceTimes times;
    std::vector<std::string> looked_at{dataset.source};
    if (is_part_glob(dataset.source, dataset.known_format())) {
        const ShardMatches shards = match_shards(dataset.source);
        if (shards.err != 0 || shards.paths.empty())
            return times;
        looked_at = shards.paths;
        const std::set<std::string> dirs = shards.directory_paths();  // a shard added or removed changes one
        looked_at.insert(looked_at.end(), dirs.begin(), dirs.end());
    }
    times.present = newest_ctime_of(looked_at, times.newest_ctime);
    const std::string manifest = manifest_path(manifest_dir, dataset.name);
    struct stat st {};
    if (times.present && dataset.from_catalog && !manifest_dir.empty() && ::lstat(manifest.c_str(), &st) == 0 &&
        untrusted_manifest_reason(manifest).empty()) {
        try {
            times.manifest_scanned = read_manifest_header(manifest).scanned;
        } catch (const Error&) {
        }
    }
    return times;
}

SourceFacts probe_far_source(const Dataset& dataset, const std::string& manifest_dir)
{
    SourceFacts facts;
    facts.format = dataset.known_format();
    const std::string path = manifest_path(manifest_dir, dataset.name);
    struct stat st {};
    if (manifest_dir.empty() || ::lstat(path.c_str(), &st) != 0 || !untrusted_manifest_reason(path).empty())
        return facts;
    try {
        const ManifestHeader header = read_manifest_header(path);
        facts.manifest_scanned = header.scanned;
        if (header.format == Format::Dir) {
            facts.format = Format::Dir;
            facts.bytes = header.bytes;
            facts.files = header.entries;
            facts.from_manifest = true;
        }
    } catch (const Error& e) {
        facts.note = unused_manifest_line(dataset.name, e.what(), "its size is known once its mover job reads it");
    }
    return facts;
}

}  // namespace dlstage
