#include "stager/plan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/dataset_format.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dataset_walk.hpp"
#include "lib/source_facts.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/staging_mode.hpp"

namespace dlstage::stager {

std::uint64_t Plan::total_bytes() const
{
    std::uint64_t sum = 0;
    for (const Entry& e : entries)
        sum += e.type == EntryType::File ? e.size : 0;
    return sum;
}

std::uint64_t Plan::file_count() const
{
    return static_cast<std::uint64_t>(std::count_if(
        entries.begin(), entries.end(), [](const Entry& e) { return e.type != EntryType::Dir; }));
}

namespace {
Entry entry_from_stat(const std::string& rel, const struct stat& st)
{
    Entry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<std::uint32_t>(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) {
        e.type = EntryType::File;
        e.size = static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISDIR(st.st_mode)) {
        e.type = EntryType::Dir;
    } else if (S_ISLNK(st.st_mode)) {
        e.type = EntryType::Symlink;
    }
    return e;
}

void add_single_file(const std::string& path, Plan& plan)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        throw_cannot("read", shown_path(path), errno);
    if (!S_ISREG(st.st_mode))
        throw Error(quoted(path) + " is not a regular file");
    if (access(path.c_str(), R_OK) != 0)
        throw_cannot("read", shown_path(path), errno);
    plan.entries.push_back(entry_from_stat(std::string(base_name(path)), st));
}

// Tar shards: the glob's matches, sorted; each staged under its base name.
Plan plan_shards(const Dataset& dataset)
{
    Plan plan;
    plan.format = Format::Tar;
    const std::string& pattern = dataset.source;
    plan.source_root = split_parent(pattern).first;
    const ShardMatches found = match_shards(pattern);
    if (found.err != 0)
        throw_cannot("read", shown_path(pattern), found.err);
    if (found.paths.empty())
        throw Error("no tar shards match " + quoted(pattern));
    policy::require(policy::source_fits_format({pattern, Format::Tar, false, found.directories()}));
    for (const std::string& path : found.paths)
        add_single_file(path, plan);
    return plan;
}
}  // namespace

Plan build_plan(const Dataset& dataset, unsigned walk_threads)
{
    const Format known = dataset.known_format();
    if (known == Format::Tar && is_glob(dataset.source))
        return plan_shards(dataset);

    struct stat st {};
    if (stat(dataset.source.c_str(), &st) != 0)
        throw_cannot("read", shown_path(dataset.source), errno);
    Plan plan;
    policy::require(policy::source_fits_format({dataset.source, known, S_ISDIR(st.st_mode), 0}));
    if (S_ISDIR(st.st_mode)) {
        plan.format = Format::Dir;
        plan.source_root = dataset.source;
        for (const WalkedEntry& walked : walk_dataset(dataset.source, walk_threads)) {
            plan.entries.push_back(entry_from_stat(walked.path, walked.st));
            plan.entries.back().target = walked.link_target;
        }
        return plan;
    }
    plan.format = known == Format::Auto ? Format::File : known;
    plan.source_root = split_parent(dataset.source).first;
    plan.single_file = true;
    add_single_file(dataset.source, plan);
    return plan;
}

// --- wire format -------------------------------------------------------------
// Little more than the fields in order; both ends are the same binary.

namespace {
class Writer {
public:
    template <typename T>
    void put(T value)
    {
        out_.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
    void put(const std::string& text)
    {
        put(static_cast<std::uint32_t>(text.size()));
        out_ += text;
    }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class Reader {
public:
    explicit Reader(const std::string& in) : in_(in) {}
    template <typename T>
    T get()
    {
        T value;
        need(sizeof value);
        std::memcpy(&value, in_.data() + pos_, sizeof value);
        pos_ += sizeof value;
        return value;
    }
    std::string get_string()
    {
        const auto size = get<std::uint32_t>();
        need(size);
        std::string text = in_.substr(pos_, size);
        pos_ += size;
        return text;
    }
    bool done() const { return pos_ == in_.size(); }

private:
    void need(std::size_t n) const
    {
        if (in_.size() - pos_ < n)
            throw Error("malformed staging plan (truncated)");
    }
    const std::string& in_;
    std::size_t pos_ = 0;
};

constexpr std::uint32_t kPlanMagic = 0x444c5331;  // "DLS1"
}  // namespace

std::string serialize(const Plan& plan)
{
    Writer w;
    w.put(kPlanMagic);
    w.put(plan.source_root);
    w.put(static_cast<std::uint8_t>(plan.format));
    w.put(static_cast<std::uint8_t>(plan.single_file));
    w.put(static_cast<std::uint64_t>(plan.entries.size()));
    for (const Entry& e : plan.entries) {
        w.put(static_cast<std::uint8_t>(e.type));
        w.put(e.path);
        w.put(e.mode);
        w.put(e.mtime_sec);
        w.put(e.mtime_nsec);
        w.put(e.size);
        w.put(e.target);
    }
    return w.take();
}

Plan deserialize(const std::string& bytes)
{
    Reader r(bytes);
    if (r.get<std::uint32_t>() != kPlanMagic)
        throw Error("malformed staging plan (bad magic)");
    Plan plan;
    plan.source_root = r.get_string();
    plan.format = static_cast<Format>(r.get<std::uint8_t>());
    plan.single_file = r.get<std::uint8_t>() != 0;
    const auto count = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < count; ++i) {
        Entry e;
        e.type = static_cast<EntryType>(r.get<std::uint8_t>());
        e.path = r.get_string();
        e.mode = r.get<std::uint32_t>();
        e.mtime_sec = r.get<std::int64_t>();
        e.mtime_nsec = r.get<std::uint32_t>();
        e.size = r.get<std::uint64_t>();
        e.target = r.get_string();
        plan.entries.push_back(std::move(e));
    }
    if (!r.done())
        throw Error("malformed staging plan (trailing bytes)");
    return plan;
}

}  // namespace dlstage::stager
