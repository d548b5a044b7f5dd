#include "stager/plan/manifest_scan.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

namespace {
// xxh3 of one file, read through a descriptor that must still show the
// size and mtime the walk saw.
std::uint64_t digest_of(const std::string& path, const EntryList::Record& e, std::vector<char>& buffer)
{
    const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", path, errno);
    XXH3_state_t* state = XXH3_createState();
    if (!state)
        throw Error("out of memory hashing " + path);
    XXH3_64bits_reset(state);
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            const int err = errno;
            XXH3_freeState(state);
            throw_cannot("read", path, err);
        }
        if (n == 0)
            break;
        XXH3_64bits_update(state, buffer.data(), static_cast<std::size_t>(n));
        total += static_cast<std::uint64_t>(n);
    }
    const std::uint64_t digest = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw_cannot("read", path, errno);
    if (total != e.size || static_cast<std::uint64_t>(st.st_size) != e.size || st.st_mtim.tv_sec != e.mtime_sec ||
        static_cast<std::uint32_t>(st.st_mtim.tv_nsec) != e.mtime_nsec)
        throw Error(path + " changed while it was scanned; scan again once the dataset is still");
    return digest;
}

const char* type_name(EntryType type)
{
    return type == EntryType::File ? "file" : type == EntryType::Dir ? "directory" : "symlink";
}
}  // namespace

std::string manifest_path(const Config& config, const std::string& dataset)
{
    return dlstage::manifest_path(config.site.manifests(), dataset);
}

Manifest scan_dataset(const Dataset& dataset, unsigned threads)
{
    Manifest m;
    m.header.dataset = dataset.name;
    m.header.source = dataset.source;
    m.header.scanned = static_cast<std::int64_t>(std::time(nullptr));
    // The root's times before the walk, each directory's as the walk meets
    // it (before listing it): a change during the scan leaves a time older
    // than the change, so the manifest is found stale, never the reverse.
    struct stat root {};
    if (::stat(dataset.source.c_str(), &root) == 0)
        m.header.root_times = FileTimes::of(root);
    std::mutex mutex;
    std::map<std::string, struct timespec> ctimes;
    Plan plan = build_plan(dataset, 16, [&](const std::string& path, const struct stat& st) {
        const std::lock_guard<std::mutex> lock(mutex);
        ctimes[path] = st.st_ctim;
    });
    m.header.root = plan.source_root;
    m.header.format = plan.format;
    m.header.single_file = plan.single_file;
    m.entries = std::move(plan.entries);
    for (std::size_t i = 0; i < m.entries.size(); ++i)
        if (m.entries.type(i) == EntryType::Dir) {
            const struct timespec& c = ctimes.at(std::string(m.entries.path(i)));
            m.dir_ctimes.push_back({i, c.tv_sec, static_cast<std::uint32_t>(c.tv_nsec)});
        }
    m.digests.assign(m.entries.size(), 0);
    for_each_index(m.entries.size(), threads, [&](std::size_t i) {
        thread_local std::vector<char> buffer(std::size_t{1} << 20);  // one per reader, not per file
        if (m.entries.type(i) == EntryType::File)
            m.digests[i] = digest_of(m.header.root + "/" + std::string(m.entries.path(i)), m.entries.record(i), buffer);
    });
    m.header.files = m.entries.non_dir_count();
    m.header.bytes = m.entries.total_file_bytes();
    m.header.entries = m.entries.size();
    return m;
}

SourceChanges changes_since(const Manifest& manifest, const Plan& now, std::size_t limit)
{
    SourceChanges changes;
    const auto note = [&](const std::string& what) {
        if (changes.examples.size() < limit)
            changes.examples.push_back(what);
        ++changes.count;
    };
    // Paths are views into the manifest's arena: no copy of 1 M names.
    const EntryList& was = manifest.entries;
    const EntryList& is = now.entries;
    std::map<std::string_view, std::size_t> then;
    for (std::size_t i = 0; i < was.size(); ++i)
        then.emplace(was.path(i), i);
    for (std::size_t i = 0; i < is.size(); ++i) {
        const std::string path(is.path(i));
        const auto it = then.find(path);
        if (it == then.end()) {
            note(path + ": added");
            continue;
        }
        const std::size_t j = it->second;
        const EntryList::Record &a = was.record(j), &b = is.record(i);
        if (a.type != b.type)
            note(path + ": now a " + type_name(b.type));
        else if (was.file_size(j) != is.file_size(i))
            note(path + ": size " + std::to_string(was.file_size(j)) + " -> " + std::to_string(is.file_size(i)));
        else if (a.mtime_sec != b.mtime_sec || a.mtime_nsec != b.mtime_nsec)
            note(path + ": modified");
        else if (was.target(j) != is.target(i))
            note(path + ": points elsewhere");
        then.erase(it);
    }
    for (const auto& [path, index] : then)
        note(std::string(path) + ": removed");
    return changes;
}

}  // namespace dlstage::stager
