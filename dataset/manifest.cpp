#include "dataset/manifest.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fcntl.h>
#include <tuple>
#include <unistd.h>

#include "config/config_paths.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage {

namespace {
constexpr const char* kMagic = "dlstage-manifest 2";
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;  // two paths of PATH_MAX, escaped, and the numbers

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

std::string time_text(std::int64_t sec, std::uint32_t nsec)
{
    char text[48];
    std::snprintf(text, sizeof text, "%lld.%09u", static_cast<long long>(sec), nsec);
    return text;
}

// SECONDS.NANOSECONDS; throws Error.
std::pair<std::int64_t, std::uint32_t> parse_time(std::string_view text)
{
    const std::size_t dot = text.find('.');
    if (dot == std::string_view::npos || text.size() - dot - 1 != 9)
        throw Error("a time is SECONDS.NANOSECONDS (9 digits)");
    const bool negative = !text.empty() && text[0] == '-';
    const auto seconds = parse_count(text.substr(negative ? 1 : 0, dot - (negative ? 1 : 0)), 0, INT64_MAX);
    return {negative ? -static_cast<std::int64_t>(seconds) : static_cast<std::int64_t>(seconds),
            static_cast<std::uint32_t>(parse_count(text.substr(dot + 1), 0, 999999999))};
}

std::string entry_line(const EntryList& list, std::size_t i, std::uint64_t digest, const std::string& ctime)
{
    const EntryList::Record& r = list.record(i);
    const EntryType type = list.type(i);
    char numbers[64];
    std::snprintf(numbers, sizeof numbers, "%c\t%o\t%llu\t", type_letter(type), static_cast<unsigned>(r.mode),
                  static_cast<unsigned long long>(list.file_size(i)));
    std::string line = numbers;
    line += time_text(r.mtime_sec, r.mtime_nsec) + '\t';
    line += type == EntryType::Dir ? ctime : "-";
    line += '\t';
    line += type == EntryType::File ? hex64(digest) : "-";
    line += '\t';
    line += escaped(list.path(i));
    if (type == EntryType::Symlink)
        line += '\t' + escaped(list.target(i));
    return line + '\n';
}

Format format_named(const std::string& name)
{
    for (const auto& [each, format] : format_names())
        if (format != Format::Auto && each == name)
            return format;
    throw Error("unknown format " + quoted(name));
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

// The header's keys, in their order.
const std::vector<std::string>& header_keys()
{
    static const std::vector<std::string> keys = {"dataset", "source", "root",  "format",  "single_file",
                                                  "scanned", "files",  "bytes", "entries", "root_times"};
    return keys;
}

// Reads a manifest a line at a time: the header into `header`, each entry
// into `m` (unless header_only).  Throws Error naming the line.
class Parser {
public:
    Parser(Manifest& m, bool with_digests) : m_(m), with_digests_(with_digests) {}

    // Returns false once the header is complete and no entry is wanted.
    void line(std::string_view line)
    {
        ++line_no_;
        if (line_no_ == 1) {
            if (line == "dlstage-manifest 1")
                throw Error("a manifest of an older dlstage (no directory times)");
            if (line != kMagic)
                throw Error("not a dlstage manifest (expected '" + std::string(kMagic) + "')");
        } else if (line_no_ <= 1 + header_keys().size()) {
            const std::string& want = header_keys()[line_no_ - 2];
            const std::size_t space = line.find(' ');
            if (space == std::string_view::npos || line.substr(0, space) != want)
                throw Error("expected '" + want + " VALUE'");
            header_value(want, unescaped(line.substr(space + 1)));
        } else {
            add_entry(line);
        }
    }
    bool header_done() const { return line_no_ >= 1 + header_keys().size(); }

    void finish() const
    {
        if (!header_done())
            throw Error("the header is incomplete");
        const ManifestHeader& h = m_.header;
        if (h.entries != m_.entries.size() || h.files != m_.entries.non_dir_count() ||
            h.bytes != m_.entries.total_file_bytes())
            throw Error("the counts in the header do not match the entries (cut short or edited)");
    }

    std::size_t line_no() const { return line_no_; }

private:
    void header_value(const std::string& key, const std::string& value)
    {
        ManifestHeader& h = m_.header;
        if (key == "dataset")
            h.dataset = value;
        else if (key == "source")
            h.source = value;
        else if (key == "root")
            h.root = value;
        else if (key == "format")
            h.format = format_named(value);
        else if (key == "single_file")
            h.single_file = value == "1";
        else if (key == "scanned")
            h.scanned = static_cast<std::int64_t>(parse_count(value, 0, INT64_MAX));
        else if (key == "files")
            h.files = parse_count(value, 0, UINT64_MAX);
        else if (key == "bytes")
            h.bytes = parse_count(value, 0, UINT64_MAX);
        else if (key == "entries")
            h.entries = parse_count(value, 0, UINT64_MAX);
        else if (key == "root_times") {
            const std::vector<std::string> both = split(value, ' ');
            if (both.size() != 2)
                throw Error("root_times is MTIME CTIME");
            std::tie(h.root_times.mtime_sec, h.root_times.mtime_nsec) = parse_time(both[0]);
            std::tie(h.root_times.ctime_sec, h.root_times.ctime_nsec) = parse_time(both[1]);
        }
    }

    void add_entry(std::string_view line)
    {
        const std::vector<std::string> fields = split(line, '\t');
        if (fields.size() < 7)
            throw Error("an entry has TYPE MODE SIZE MTIME CTIME DIGEST PATH separated by tabs");
        const EntryType type = type_of(fields[0]);
        if (fields.size() != (type == EntryType::Symlink ? 8u : 7u))
            throw Error(type == EntryType::Symlink ? "a symlink entry ends with its target"
                                                   : "only a symlink entry has an eighth field");
        const std::uint32_t mode = parse_mode(fields[1]);
        const std::uint64_t size = parse_count(fields[2], 0, UINT64_MAX);
        const auto [mtime_sec, mtime_nsec] = parse_time(fields[3]);
        if (type == EntryType::Dir) {
            const auto [sec, nsec] = parse_time(fields[4]);
            m_.dir_ctimes.push_back({m_.entries.size(), sec, nsec});
        } else if (fields[4] != "-") {
            throw Error("only a directory has a ctime ('-' for others)");
        }
        const std::uint64_t digest = type == EntryType::File ? parse_hex64(fields[5]) : 0;
        if (type != EntryType::File && fields[5] != "-")
            throw Error("only a file has a digest ('-' for others)");
        const std::string path = unescaped(fields[6]);
        if (path.empty() || path[0] == '/' || path == ".." || starts_with(path, "../") ||
            path.find("/../") != std::string::npos || ends_with(path, "/.."))
            throw Error("the path " + quoted(path) + " leaves the dataset");
        m_.entries.add(type, path, mode, mtime_sec, mtime_nsec, size,
                       type == EntryType::Symlink ? unescaped(fields[7]) : std::string());
        if (with_digests_)
            m_.digests.push_back(digest);
    }

    Manifest& m_;
    bool with_digests_;
    std::size_t line_no_ = 0;
};

// One line whatever the text held (a name, an escape, a type letter).
Error located(const Error& e, const std::string& name, const Parser& parser, const Manifest& m)
{
    const std::string& dataset = m.header.dataset;
    return Error(printable(name + (parser.line_no() ? ":" + std::to_string(parser.line_no()) : "") + ": " + e.what() +
                           "; run 'dlstage catalog scan " + (dataset.empty() ? "NAME" : dataset) + "' again"));
}

Fd open_manifest(const std::string& path)
{
    Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid())
        throw_cannot("read", path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw Error(path + " is not a regular file");
    return fd;
}

// Feeds the file's lines to the parser, a block at a time, until the end
// or until stop() says enough; at most `limit` bytes.
template <typename Stop>
void read_lines_of(const std::string& path, Parser& parser, std::size_t block, std::uint64_t limit, Stop stop)
{
    const Fd fd = open_manifest(path);
    std::string pending;
    std::vector<char> buffer(block);
    std::uint64_t total = 0;
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw_cannot("read", path, errno);
        if (n == 0)
            break;
        total += static_cast<std::uint64_t>(n);
        pending.append(buffer.data(), static_cast<std::size_t>(n));
        std::size_t at = 0;
        for (std::size_t end; (end = pending.find('\n', at)) != std::string::npos; at = end + 1) {
            parser.line(std::string_view(pending).substr(at, end - at));
            if (stop())
                return;
        }
        pending.erase(0, at);
        if (total >= limit)
            throw Error("longer than " + std::to_string(limit) + " bytes where a header was expected");
    }
    if (!pending.empty())
        throw Error("the last line has no newline (cut short?)");
}
}  // namespace

FileTimes FileTimes::of(const struct stat& st)
{
    return {st.st_mtim.tv_sec, static_cast<std::uint32_t>(st.st_mtim.tv_nsec), st.st_ctim.tv_sec,
            static_cast<std::uint32_t>(st.st_ctim.tv_nsec)};
}

std::string manifest_path(const std::string& manifest_dir, const std::string& dataset)
{
    return manifest_dir + "/" + dataset + ".manifest";
}

std::string manifest_text(const Manifest& m)
{
    const ManifestHeader& h = m.header;
    std::string text = std::string(kMagic) + "\n";
    const auto field = [&](const char* key, const std::string& value) { text += key + (" " + escaped(value)) + "\n"; };
    field("dataset", h.dataset);
    field("source", h.source);
    field("root", h.root);
    field("format", to_string(h.format));
    field("single_file", h.single_file ? "1" : "0");
    field("scanned", std::to_string(h.scanned));
    field("files", std::to_string(m.entries.non_dir_count()));
    field("bytes", std::to_string(m.entries.total_file_bytes()));
    field("entries", std::to_string(m.entries.size()));
    field("root_times", time_text(h.root_times.mtime_sec, h.root_times.mtime_nsec) + " " +
                            time_text(h.root_times.ctime_sec, h.root_times.ctime_nsec));
    std::size_t next_dir = 0;
    for (std::size_t i = 0; i < m.entries.size(); ++i) {
        std::string ctime = "-";
        if (next_dir < m.dir_ctimes.size() && m.dir_ctimes[next_dir].entry == i) {
            ctime = time_text(m.dir_ctimes[next_dir].sec, m.dir_ctimes[next_dir].nsec);
            ++next_dir;
        }
        text += entry_line(m.entries, i, m.digests.empty() ? 0 : m.digests[i], ctime);
    }
    return text;
}

Manifest parse_manifest(std::string_view text, const std::string& name)
{
    Manifest m;
    Parser parser(m, true);
    try {
        std::size_t at = 0;
        while (at < text.size()) {
            const std::size_t end = text.find('\n', at);
            if (end == std::string_view::npos)
                throw Error("the last line has no newline (cut short?)");
            parser.line(text.substr(at, end - at));
            at = end + 1;
        }
        parser.finish();
    } catch (const Error& e) {
        throw located(e, name, parser, m);
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

Manifest read_manifest(const std::string& path, bool with_digests)
{
    Manifest m;
    Parser parser(m, with_digests);
    try {
        read_lines_of(path, parser, std::size_t{1} << 20, UINT64_MAX, [] { return false; });
        parser.finish();
    } catch (const Error& e) {
        throw located(e, path, parser, m);
    }
    return m;
}

ManifestHeader read_manifest_header(const std::string& path)
{
    Manifest m;
    Parser parser(m, false);
    try {
        read_lines_of(path, parser, 4096, kMaxHeaderBytes, [&] { return parser.header_done(); });
        if (!parser.header_done())
            throw Error("the header is incomplete");
    } catch (const Error& e) {
        throw located(e, path, parser, m);
    }
    return m.header;
}

std::string untrusted_manifest_reason(const std::string& path)
{
    return untrusted_file_reason(path, "manifest");
}

std::string stale_at_root(const ManifestHeader& header, const Dataset& dataset, const struct stat& root_now)
{
    if (header.source != dataset.source)
        return "scanned from " + header.source + ", the catalog now says " + dataset.source;
    const FileTimes now = FileTimes::of(root_now);
    if (now != header.root_times)
        return dataset.source + " changed at " + moment_text(std::max(now.mtime_sec, now.ctime_sec)) +
               ", after the scan";
    return "";
}

std::string stale_below_root(const Manifest& m, unsigned threads)
{
    const Fd root(::open(m.header.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid())
        return cannot("read", shown_path(m.header.root), errno);
    std::vector<std::string> why(m.dir_ctimes.size());
    for_each_index(m.dir_ctimes.size(), threads, [&](std::size_t k) {
        const Manifest::DirCtime& d = m.dir_ctimes[k];
        const EntryList::Record& r = m.entries.record(d.entry);
        const std::string path(m.entries.path(d.entry));
        struct stat st {};
        if (::fstatat(root.get(), path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            why[k] = m.header.root + "/" + path + " is gone";
        else if (!S_ISDIR(st.st_mode) || FileTimes::of(st) != FileTimes{r.mtime_sec, r.mtime_nsec, d.sec, d.nsec})
            why[k] = m.header.root + "/" + path + " changed at " +
                     moment_text(std::max(st.st_mtim.tv_sec, st.st_ctim.tv_sec)) + ", after the scan";
    });
    for (const std::string& w : why)
        if (!w.empty())
            return w;  // the first in path order
    return "";
}

std::string stale_manifest_line(const std::string& dataset, const std::string& why, const std::string& fallback)
{
    return "manifest of " + dataset + " is older than its source (" + why + "): " + fallback +
           "; run 'dlstage catalog scan " + dataset + "'";
}

std::string unused_manifest_line(const std::string& dataset, const std::string& why, const std::string& fallback)
{
    return "not using the manifest of " + dataset + ": " + why + "; " + fallback;
}

}  // namespace dlstage
