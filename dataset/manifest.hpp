// A dataset's manifest: what `dlstage catalog scan NAME` found in its source
// once (an admin's run), so that later checks need no walk of the parallel
// file system: every entry's type, mode, size and mtime, each directory's
// ctime and each file's xxh3 digest.  Written as text, one entry a line,
// under site.manifest_dir/NAME.manifest:
//
//   dlstage-manifest 2
//   dataset imagenet
//   source /p/imagenet
//   root /p/imagenet
//   format dir
//   single_file 0
//   scanned 1763900000
//   files 1281167
//   bytes 150000000000
//   entries 1282167
//   root_times MTIME CTIME                         (of the source root as scanned)
//   TYPE MODE SIZE MTIME CTIME DIGEST PATH [TARGET]  (tab-separated; f d l)
//
// CTIME is a directory's ('-' for others), DIGEST a file's ('-' for
// others); times are SECONDS.NANOSECONDS.  Paths and values have
// backslash, tab, newline and other control bytes escaped (\\, \t, \n,
// \xNN), so any name round-trips.
//
// Here in lib/ (not the stager) because the plugin reads the header at
// submit, and the plugin links neither MPI nor libarchive.  Scanning (it
// walks and hashes) is the stager's: stager/plan/manifest_scan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

#include "config/config.hpp"
#include "dataset/entry_list.hpp"

namespace dlstage {

struct FileTimes {
    std::int64_t mtime_sec = 0;
    std::uint32_t mtime_nsec = 0;
    std::int64_t ctime_sec = 0;
    std::uint32_t ctime_nsec = 0;

    static FileTimes of(const struct stat& st);
    bool operator==(const FileTimes& o) const
    {
        return mtime_sec == o.mtime_sec && mtime_nsec == o.mtime_nsec && ctime_sec == o.ctime_sec &&
               ctime_nsec == o.ctime_nsec;
    }
    bool operator!=(const FileTimes& o) const { return !(*this == o); }
};

struct ManifestHeader {
    std::string dataset;
    std::string source;  // the catalog's source when it was scanned
    std::string root;    // where entry paths are read from
    Format format = Format::Auto;
    bool single_file = false;
    std::int64_t scanned = 0;   // seconds since the epoch
    std::uint64_t files = 0;    // files and symlinks
    std::uint64_t bytes = 0;    // of the files
    std::uint64_t entries = 0;  // files, symlinks and directories
    FileTimes root_times;       // of the source as scanned (stat, following a symlink)
};

struct Manifest {
    ManifestHeader header;
    EntryList entries;                   // sorted by path, as a walk plans them
    std::vector<std::uint64_t> digests;  // xxh3 of each file's bytes (0: not a file); empty if not read
    struct DirCtime {
        std::size_t entry;
        std::int64_t sec;
        std::uint32_t nsec;
    };
    std::vector<DirCtime> dir_ctimes;  // every directory's, in entry order
};

// manifest_dir/NAME.manifest
std::string manifest_path(const std::string& manifest_dir, const std::string& dataset);

// The header's counts are taken from the entries.
std::string manifest_text(const Manifest& manifest);
// Throws Error naming `name` and the line of the first problem.
Manifest parse_manifest(std::string_view text, const std::string& name);

// Written under a temporary name in the same directory, then renamed into
// place: a reader sees the old manifest or the new one, never half.
void write_manifest(const std::string& path, const Manifest& manifest);
// The whole manifest, read in blocks (never the whole text in memory);
// with_digests = false leaves digests empty (the stager's plan needs none).
Manifest read_manifest(const std::string& path, bool with_digests = true);
// The header alone: at most the first 64 KiB are read, however many
// entries follow (the plugin, at submit).
ManifestHeader read_manifest_header(const std::string& path);

// Why the manifest at path must not be believed, or "": the configuration
// files' rule (config/config_paths: owned by root, or by the caller when not
// root, and writable by nobody else, nor any directory above it).  A
// manifest decides what a job stages and what submit admits.
std::string untrusted_manifest_reason(const std::string& path);

// Why the manifest no longer describes the dataset's source, judged from
// the source root alone (root_now: its stat now), or "" if it still may.
// Sees: the catalog's source moved; an entry added, removed or renamed
// directly in the root; the root's mode, owner or times changed.
std::string stale_at_root(const ManifestHeader& header, const Dataset& dataset, const struct stat& root_now);

// The same for every directory of the tree (one stat each, `threads` at
// once): an entry added, removed or renamed anywhere, a directory changed
// or replaced.  Not seen: a file rewritten in place (its directory does not
// change); the stager checks each file's size and mtime as it opens it.
std::string stale_below_root(const Manifest& manifest, unsigned threads);


// One line for the job's output when a manifest there was not used:
// "manifest of NAME is older than its source (WHY): planning from a walk;
// run 'dlstage catalog scan NAME'", and for an untrusted or broken one.
std::string stale_manifest_line(const std::string& dataset, const std::string& why, const std::string& fallback);
std::string unused_manifest_line(const std::string& dataset, const std::string& why, const std::string& fallback);

}  // namespace dlstage
