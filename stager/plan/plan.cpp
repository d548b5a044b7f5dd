#include "stager/plan/plan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dataset/manifest.hpp"
#include "dataset/source_probe.hpp"
#include "facts/dataset_format.hpp"
#include "lib/byte_reader.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dataset_entry.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/staging_mode.hpp"

namespace dlstage::stager {

void add_walked(EntryList& entries, std::string_view rel, const struct stat& st, std::string_view target)
{
    const EntryType type = S_ISDIR(st.st_mode)   ? EntryType::Dir
                           : S_ISLNK(st.st_mode) ? EntryType::Symlink
                                                 : EntryType::File;
    entries.add(type, rel, st.st_mode & 07777, st.st_mtim.tv_sec, static_cast<std::uint32_t>(st.st_mtim.tv_nsec),
                static_cast<std::uint64_t>(st.st_size), target);
}

namespace {
void add_single_file(const std::string& path, Plan& plan)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        throw_cannot("read", shown_path(path), errno);
    if (!S_ISREG(st.st_mode))
        throw Error(quoted(path) + " is not a regular file");
    if (access(path.c_str(), R_OK) != 0)
        throw_cannot("read", shown_path(path), errno);
    add_walked(plan.entries, base_name(path), st, {});
}

// Tar shards or an image set: the glob's matches, sorted; each staged
// under its base name.
Plan plan_shards(const Dataset& dataset, Format format)
{
    Plan plan;
    plan.format = format;
    const std::string& pattern = dataset.source;
    plan.source_root = split_parent(pattern).first;
    const ShardMatches found = match_shards(pattern);
    if (found.err != 0)
        throw_cannot("read", shown_path(pattern), found.err);
    if (found.paths.empty())
        throw Error(std::string("no ") + traits_of(format).parts + " match " + quoted(pattern));
    policy::require(policy::source_fits_format({pattern, format, false, found.directories()}));
    for (const std::string& path : found.paths)
        add_single_file(path, plan);
    return plan;
}

// Each entry goes straight from the walk into the plan's compact list: no
// list of walked entries with their whole struct stat in between (at 1.28 M
// files that list alone was larger than the plan).  A file whose mode lets
// this user read it is not asked about again: what the plan lists is read
// by this same user, whose open reports an ACL that says no.
void walk_into(EntryList& entries, const std::string& root, unsigned threads, const DirSeen& dir_seen)
{
    const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd.valid())
        throw_cannot("read", shown_path(root), errno);
    const Caller reader = Caller::current();
    std::mutex mutex;
    walk_tree(root_fd.get(), root, threads, [&](const FoundEntry& found) {
        const std::string target = check_dataset_entry(found, root, &reader);
        if (dir_seen && S_ISDIR(found.st.st_mode))
            dir_seen(found.path, found.st);
        const std::lock_guard<std::mutex> lock(mutex);
        add_walked(entries, found.path, found.st, target);
    });
    entries.sort_by_path();
}
}  // namespace

Plan build_plan(const Dataset& dataset, unsigned walk_threads, const DirSeen& dir_seen)
{
    const Format known = dataset.known_format();
    if (is_part_glob(dataset.source, known))
        return plan_shards(dataset, known);

    struct stat st {};
    if (stat(dataset.source.c_str(), &st) != 0)
        throw_cannot("read", shown_path(dataset.source), errno);
    Plan plan;
    policy::require(policy::source_fits_format({dataset.source, known, S_ISDIR(st.st_mode), 0}));
    if (S_ISDIR(st.st_mode)) {
        plan.format = Format::Dir;
        plan.source_root = dataset.source;
        walk_into(plan.entries, dataset.source, walk_threads, dir_seen);
        return plan;
    }
    plan.format = known == Format::Auto ? Format::File : known;
    plan.source_root = split_parent(dataset.source).first;
    plan.single_file = true;
    add_single_file(dataset.source, plan);
    return plan;
}


namespace {
constexpr const char* kWalkInstead = "planning from a walk";

// The manifest's plan if it may be used, else nothing and (in note) why
// not.  Only for a tree: a file or shards plan with a stat or a glob.
std::optional<Plan> manifest_plan(const std::string& path, const Dataset& dataset, std::string& note, unsigned threads)
{
    struct stat source {};
    if (::stat(dataset.source.c_str(), &source) != 0 || !S_ISDIR(source.st_mode))
        return std::nullopt;  // the walk says what is wrong with it
    if (const std::string why = untrusted_manifest_reason(path); !why.empty()) {
        note = unused_manifest_line(dataset.name, why, kWalkInstead);
        return std::nullopt;
    }
    try {
        // The header and one stat first: a manifest stale at its root is
        // not read any further.
        if (const std::string why = stale_at_root(read_manifest_header(path), dataset, source); !why.empty()) {
            note = stale_manifest_line(dataset.name, why, kWalkInstead);
            return std::nullopt;
        }
        Manifest manifest = read_manifest(path, false);
        if (manifest.header.format != Format::Dir || manifest.header.root != dataset.source) {
            note = unused_manifest_line(dataset.name, "it is not of the directory " + dataset.source, kWalkInstead);
            return std::nullopt;
        }
        if (const std::string why = stale_below_root(manifest, threads); !why.empty()) {
            note = stale_manifest_line(dataset.name, why, kWalkInstead);
            return std::nullopt;
        }
        Plan plan;
        plan.source_root = manifest.header.root;
        plan.format = Format::Dir;
        plan.entries = std::move(manifest.entries);
        plan.from_manifest = true;
        plan.manifest_scanned = manifest.header.scanned;
        return plan;
    } catch (const Error& e) {
        note = unused_manifest_line(dataset.name, e.what(), kWalkInstead);
        return std::nullopt;
    }
}
}  // namespace

Plan plan_for(const std::string& manifest_dir, const Dataset& dataset, std::string& note, unsigned walk_threads)
{
    note.clear();
    if (dataset.from_catalog && !manifest_dir.empty()) {
        const std::string path = manifest_path(manifest_dir, dataset.name);
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0)
            if (std::optional<Plan> plan = manifest_plan(path, dataset, note, walk_threads))
                return std::move(*plan);
    }
    return build_plan(dataset, walk_threads);
}

// --- wire format -------------------------------------------------------------

namespace {
// "DLS2": version 2, the compact blocks (version 1 sent each entry's fields).
constexpr std::uint32_t kPlanMagic = 0x444c5332;
constexpr const char* kWhat = "staging plan";

std::uint64_t records_bytes(std::size_t count)
{
    return static_cast<std::uint64_t>(count) * sizeof(EntryList::Record);
}
}  // namespace

namespace {
std::string header_of(const Plan& plan, std::uint64_t arena_bytes)
{
    std::string w;
    put_bytes(w, kPlanMagic);
    put_bytes(w, static_cast<std::uint32_t>(sizeof(EntryList::Record)));
    put_text(w, plan.source_root);
    put_bytes(w, static_cast<std::uint8_t>(plan.format));
    put_bytes(w, static_cast<std::uint8_t>(plan.single_file));
    put_bytes(w, static_cast<std::uint64_t>(plan.entries.size()));
    put_bytes(w, arena_bytes);
    return w;
}
}  // namespace

std::uint64_t Plan::bytes_to_write() const
{
    std::uint64_t held = 0;
    for (const HeldPrefix& prefix : held_prefixes)
        held += prefix.bytes;
    return total_bytes() - held;
}

Plan plan_part(const Plan& plan, const std::vector<char>& wanted, const std::vector<HeldPrefix>& held)
{
    Plan part;
    part.source_root = plan.source_root;
    part.format = plan.format;
    part.single_file = plan.single_file;
    part.from_manifest = plan.from_manifest;
    part.manifest_scanned = plan.manifest_scanned;
    auto next = held.begin();
    for (std::size_t i = 0; i < plan.entries.size(); ++i) {
        if (plan.entries.type(i) != EntryType::Dir && (i >= wanted.size() || !wanted[i]))
            continue;
        while (next != held.end() && next->entry < i)
            ++next;
        if (next != held.end() && next->entry == i && next->bytes < plan.entries.file_size(i))
            part.held_prefixes.push_back({static_cast<std::uint32_t>(part.entries.size()), next->bytes});
        part.entries.add(plan.entries[i]);
    }
    return part;
}

std::string wire_header(const Plan& plan)
{
    return header_of(plan, plan.entries.arena().size());
}

namespace {
PlanReceiver read_header(ByteReader& r)
{
    if (r.get<std::uint32_t>() != kPlanMagic)
        throw Error("malformed staging plan (bad magic: a dlstage-stager of another version?)");
    if (r.get<std::uint32_t>() != sizeof(EntryList::Record))
        throw Error("malformed staging plan (records of another size: a dlstage-stager of another build?)");
    PlanReceiver in;
    in.plan.source_root = r.get_text();
    in.plan.format = static_cast<Format>(r.get<std::uint8_t>());
    in.plan.single_file = r.get<std::uint8_t>() != 0;
    const auto count = r.get<std::uint64_t>();
    const auto arena = r.get<std::uint64_t>();
    // No more than a plan of this machine's memory could hold: a corrupt
    // header must not ask for exabytes.
    constexpr std::uint64_t kMaxBlock = std::uint64_t{1} << 40;
    if (records_bytes(1) * count > kMaxBlock || arena > kMaxBlock || count > UINT32_MAX)
        throw Error("malformed staging plan (blocks too large)");
    in.records.resize(static_cast<std::size_t>(count));
    in.arena.resize(static_cast<std::size_t>(arena));
    return in;
}
}  // namespace

PlanReceiver receive_header(const std::string& header)
{
    ByteReader r(header, kWhat);
    PlanReceiver in = read_header(r);
    if (!r.done())
        throw Error("malformed staging plan (trailing bytes)");
    return in;
}

void PlanReceiver::adopt_blocks()
{
    plan.entries = EntryList::adopt(std::move(records), std::move(arena));
}

// Canonical, unlike the blocks broadcast_plan sends: paths in entry order
// (a walk fills the arena in the order threads find entries) and the
// records' padding zeroed, so equal plans give equal bytes (a shared copy's
// source identity is a digest of them).
std::string serialize(const Plan& plan)
{
    const EntryList& in = plan.entries;
    std::vector<EntryList::Record> records(in.size());
    std::string arena;
    arena.reserve(in.arena().size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        EntryList::Record& r = records[i];
        std::memset(static_cast<void*>(&r), 0, sizeof r);
        const EntryList::Record& from = in.record(i);
        r.path_at = arena.size();
        r.size = from.size;
        r.mtime_sec = from.mtime_sec;
        r.mtime_nsec = from.mtime_nsec;
        r.path_len = from.path_len;
        r.mode = from.mode;
        r.type = from.type;
        arena += in.path(i);
        arena += in.target(i);
    }
    std::string bytes = header_of(plan, arena.size());
    bytes.append(reinterpret_cast<const char*>(records.data()), records_bytes(records.size()));
    bytes += arena;
    return bytes;
}

namespace {
// The records and the arena a header sized (no memcpy to an empty
// vector's null data).
void read_blocks(ByteReader& r, PlanReceiver& in)
{
    const char* records = r.take(records_bytes(in.records.size()));
    if (!in.records.empty())
        std::memcpy(static_cast<void*>(in.records.data()), records, records_bytes(in.records.size()));
    in.arena.assign(r.take(in.arena.size()), in.arena.size());
}
}  // namespace

Plan deserialize(const std::string& bytes)
{
    ByteReader r(bytes, kWhat);
    PlanReceiver in = read_header(r);
    read_blocks(r, in);
    if (!r.done())
        throw Error("malformed staging plan (trailing bytes)");
    in.adopt_blocks();
    return std::move(in.plan);
}

Plan deserialize_segments(const std::string& bytes)
{
    Plan all;
    ByteReader r(bytes, kWhat);
    for (bool first = true; !r.done(); first = false) {
        PlanReceiver in;
        try {
            in = read_header(r);
            read_blocks(r, in);
            in.adopt_blocks();
        } catch (const Error&) {
            break;
        }
        if (first) {
            all.source_root = in.plan.source_root;
            all.format = in.plan.format;
            all.single_file = in.plan.single_file;
        }
        for (const Entry& e : in.plan.entries)
            all.entries.add(e);
    }
    all.entries.sort_by_path();
    return all;
}

std::string source_identity(const Plan& plan)
{
    return source_identity_of(serialize(plan));
}

std::string source_identity_of(const std::string& bytes)
{
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
    return hex;
}

}  // namespace dlstage::stager
