#include "stager/manifest.hpp"

#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::stager {

namespace {
constexpr const char* kMagic = "dlstage-manifest 1";
constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 30;  // ~30 M entries

// ---------------------------------------------------------------- escaping

std::string escaped(std::string_view text)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\\')
            out += "\\\\";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\n')
            out += "\\n";
        else if (byte < 0x20 || byte == 0x7f)
            out += {'\\', 'x', hex[byte >> 4], hex[byte & 15]};
        else
            out += c;
    }
    return out;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

// Throws Error (a bare reason; the caller adds where).
std::string unescaped(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (++i == text.size())
            throw Error("a lone backslash at the end of a field");
        switch (text[i]) {
        case '\\': out += '\\'; break;
        case 't': out += '\t'; break;
        case 'n': out += '\n'; break;
        case 'x': {
            const int hi = i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
            const int lo = i + 2 < text.size() ? hex_digit(text[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                throw Error("a \\x escape without two hex digits");
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
            break;
        }
        default: throw Error(std::string("an unknown escape \\") + text[i]);
        }
    }
    return out;
}

// ---------------------------------------------------------------- entries

char type_letter(EntryType type)
{
    return type == EntryType::File ? 'f' : type == EntryType::Dir ? 'd' : 'l';
}

EntryType type_of(std::string_view letter)
{
    if (letter == "f")
        return EntryType::File;
    if (letter == "d")
        return EntryType::Dir;
    if (letter == "l")
        return EntryType::Symlink;
    throw Error("unknown entry type '" + std::string(letter) + "' (f, d or l)");
}

std::string hex64(std::uint64_t value)
{
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

std::uint64_t parse_hex64(std::string_view text)
{
    if (text.size() != 16)
        throw Error("a digest is 16 hex digits");
    std::uint64_t value = 0;
    for (const char c : text) {
        const int d = hex_digit(c);
        if (d < 0)
            throw Error("a digest is 16 hex digits");
        value = value << 4 | static_cast<std::uint64_t>(d);
    }
    return value;
}

std::string entry_line(const Entry& e, std::uint64_t digest)
{
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "%c\t%o\t%llu\t%lld.%09u\t", type_letter(e.type), e.mode,
                  static_cast<unsigned long long>(e.size), static_cast<long long>(e.mtime_sec), e.mtime_nsec);
    std::string line = numbers;
    line += e.type == EntryType::File ? hex64(digest) : "-";
    line += '\t';
    line += escaped(e.path);
    if (e.type == EntryType::Symlink)
        line += '\t' + escaped(e.target);
    return line + '\n';
}

void parse_mtime(std::string_view text, Entry& e)
{
    const std::size_t dot = text.find('.');
    if (dot == std::string_view::npos || text.size() - dot - 1 != 9)
        throw Error("an mtime is SECONDS.NANOSECONDS (9 digits)");
    const bool negative = !text.empty() && text[0] == '-';
    const auto seconds = parse_count(text.substr(negative ? 1 : 0, dot - (negative ? 1 : 0)), 0, INT64_MAX);
    e.mtime_sec = negative ? -static_cast<std::int64_t>(seconds) : static_cast<std::int64_t>(seconds);
    e.mtime_nsec = static_cast<std::uint32_t>(parse_count(text.substr(dot + 1), 0, 999999999));
}

std::uint32_t parse_mode(std::string_view text)
{
    std::uint32_t mode = 0;
    if (text.empty() || text.size() > 4)
        throw Error("a mode is up to 4 octal digits");
    for (const char c : text) {
        if (c < '0' || c > '7')
            throw Error("a mode is up to 4 octal digits");
        mode = mode * 8 + static_cast<std::uint32_t>(c - '0');
    }
    return mode;
}

void add_entry(std::string_view line, Manifest& m)
{
    const std::vector<std::string> fields = split(line, '\t');
    if (fields.size() < 6)
        throw Error("an entry has TYPE MODE SIZE MTIME DIGEST PATH separated by tabs");
    Entry e;
    e.type = type_of(fields[0]);
    if (fields.size() != (e.type == EntryType::Symlink ? 7u : 6u))
        throw Error(e.type == EntryType::Symlink ? "a symlink entry ends with its target"
                                                 : "only a symlink entry has a seventh field");
    e.mode = parse_mode(fields[1]);
    e.size = parse_count(fields[2], 0, UINT64_MAX);
    parse_mtime(fields[3], e);
    const std::uint64_t digest = e.type == EntryType::File ? parse_hex64(fields[4]) : 0;
    if (e.type != EntryType::File && fields[4] != "-")
        throw Error("only a file has a digest ('-' for others)");
    e.path = unescaped(fields[5]);
    if (e.path.empty() || e.path[0] == '/' || e.path == ".." || starts_with(e.path, "../") ||
        e.path.find("/../") != std::string::npos || ends_with(e.path, "/.."))
        throw Error("the path " + quoted(e.path) + " leaves the dataset");
    if (e.type == EntryType::Symlink)
        e.target = unescaped(fields[6]);
    m.plan.entries.push_back(std::move(e));
    m.digests.push_back(digest);
}

Format format_named(const std::string& name)
{
    for (const Format format : {Format::Dir, Format::File, Format::Tar, Format::Squashfs})
        if (to_string(format) == name)
            return format;
    throw Error("unknown format " + quoted(name));
}

// ---------------------------------------------------------------- scanning

// xxh3 of one file, read through a descriptor that must still show the
// size and mtime the walk saw.
std::uint64_t digest_of(const std::string& path, const Entry& e, std::vector<char>& buffer)
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

std::string entry_source(const Plan& plan, const Entry& e)
{
    return plan.source_root + "/" + e.path;
}
}  // namespace

std::string manifest_path(const Config& config, const std::string& dataset)
{
    return config.site.manifests() + "/" + dataset + ".manifest";
}

Manifest scan_dataset(const Dataset& dataset, unsigned threads)
{
    Manifest m;
    m.dataset = dataset.name;
    m.source = dataset.source;
    m.scanned = static_cast<std::int64_t>(std::time(nullptr));
    m.plan = build_plan(dataset);
    m.digests.assign(m.plan.entries.size(), 0);
    for_each_index(m.plan.entries.size(), threads, [&](std::size_t i) {
        thread_local std::vector<char> buffer(std::size_t{1} << 20);  // one per reader, not per file
        const Entry& e = m.plan.entries[i];
        if (e.type == EntryType::File)
            m.digests[i] = digest_of(entry_source(m.plan, e), e, buffer);
    });
    return m;
}

std::string manifest_text(const Manifest& m)
{
    std::string text = std::string(kMagic) + "\n";
    const auto field = [&](const char* key, const std::string& value) { text += key + (" " + escaped(value)) + "\n"; };
    field("dataset", m.dataset);
    field("source", m.source);
    field("root", m.plan.source_root);
    field("format", to_string(m.plan.format));
    field("single_file", m.plan.single_file ? "1" : "0");
    field("scanned", std::to_string(m.scanned));
    field("files", std::to_string(m.plan.file_count()));
    field("bytes", std::to_string(m.plan.total_bytes()));
    field("entries", std::to_string(m.plan.entries.size()));
    for (std::size_t i = 0; i < m.plan.entries.size(); ++i)
        text += entry_line(m.plan.entries[i], m.digests[i]);
    return text;
}

Manifest parse_manifest(std::string_view text, const std::string& name)
{
    Manifest m;
    std::map<std::string, std::string> header;
    static const std::vector<std::string> keys = {"dataset", "source",  "root",  "format", "single_file",
                                                  "scanned", "files", "bytes", "entries"};
    std::size_t line_no = 0;
    std::size_t at = 0;
    try {
        while (at < text.size()) {
            const std::size_t end = text.find('\n', at);
            if (end == std::string_view::npos)
                throw Error("the last line has no newline (cut short?)");
            const std::string_view line = text.substr(at, end - at);
            at = end + 1;
            ++line_no;
            if (line_no == 1) {
                if (line != kMagic)
                    throw Error("not a dlstage manifest (expected '" + std::string(kMagic) + "')");
            } else if (line_no <= 1 + keys.size()) {
                const std::size_t space = line.find(' ');
                const std::string key(line.substr(0, space));
                if (space == std::string_view::npos || key != keys[line_no - 2])
                    throw Error("expected '" + keys[line_no - 2] + " VALUE'");
                header[key] = unescaped(line.substr(space + 1));
            } else {
                add_entry(line, m);
            }
        }
        if (line_no < 1 + keys.size())
            throw Error("the header is incomplete");
        m.dataset = header["dataset"];
        m.source = header["source"];
        m.plan.source_root = header["root"];
        m.plan.format = format_named(header["format"]);
        m.plan.single_file = header["single_file"] == "1";
        m.scanned = static_cast<std::int64_t>(parse_count(header["scanned"], 0, INT64_MAX));
        if (parse_count(header["entries"], 0, UINT64_MAX) != m.plan.entries.size() ||
            parse_count(header["files"], 0, UINT64_MAX) != m.plan.file_count() ||
            parse_count(header["bytes"], 0, UINT64_MAX) != m.plan.total_bytes())
            throw Error("the counts in the header do not match the entries (cut short or edited)");
    } catch (const Error& e) {
        // One line whatever the text held (a name, an escape, a type letter).
        throw Error(printable(name + (line_no ? ":" + std::to_string(line_no) : "") + ": " + e.what() +
                              "; run 'dlstage catalog scan " +
                              (header["dataset"].empty() ? "NAME" : header["dataset"]) + "' again"));
    }
    return m;
}

void write_manifest(const std::string& path, const Manifest& manifest)
{
    const auto [dir, name] = split_parent(path);
    const Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("open", dir, errno);
    replace_file_at(fd.get(), dir, name, manifest_text(manifest), 0644);
}

Manifest read_manifest(const std::string& path)
{
    const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(path + " is not a regular file");
    return parse_manifest(read_all(fd.get(), kMaxManifestBytes, path), path);
}

SourceChanges changes_since(const Manifest& manifest, const Plan& now, std::size_t limit)
{
    SourceChanges changes;
    const auto note = [&](const std::string& what) {
        if (changes.examples.size() < limit)
            changes.examples.push_back(what);
        ++changes.count;
    };
    std::map<std::string_view, const Entry*> then;
    for (const Entry& e : manifest.plan.entries)
        then[e.path] = &e;
    for (const Entry& e : now.entries) {
        const auto it = then.find(e.path);
        if (it == then.end()) {
            note(e.path + ": added");
            continue;
        }
        const Entry& old = *it->second;
        if (old.type != e.type)
            note(e.path + ": now a " + (e.type == EntryType::File ? "file" : e.type == EntryType::Dir ? "directory" : "symlink"));
        else if (old.size != e.size)
            note(e.path + ": size " + std::to_string(old.size) + " -> " + std::to_string(e.size));
        else if (old.mtime_sec != e.mtime_sec || old.mtime_nsec != e.mtime_nsec)
            note(e.path + ": modified");
        else if (old.target != e.target)
            note(e.path + ": points elsewhere");
        then.erase(it);
    }
    for (const auto& [path, entry] : then)
        note(std::string(path) + ": removed");
    return changes;
}

}  // namespace dlstage::stager
