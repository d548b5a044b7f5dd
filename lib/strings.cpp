#include "lib/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "lib/error.hpp"

namespace dlstage {

std::vector<std::string> split(std::string_view text, char sep)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t pos = text.find(sep, start);
        if (pos == std::string_view::npos) {
            parts.emplace_back(text.substr(start));
            return parts;
        }
        parts.emplace_back(text.substr(start, pos - start));
        start = pos + 1;
    }
}

void append_nul_ended(std::string& out, std::string_view field)
{
    out.append(field);
    out.push_back('\0');
}

std::optional<std::vector<std::string>> nul_ended_fields(std::string_view text)
{
    if (!text.empty() && text.back() != '\0')
        return std::nullopt;
    if (text.empty())
        return std::vector<std::string>{};
    return split(text.substr(0, text.size() - 1), '\0');
}

std::string join(const std::vector<std::string>& parts, std::string_view sep)
{
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0)
            out += sep;
        out += parts[i];
    }
    return out;
}

std::string trim(std::string_view text)
{
    const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    while (!text.empty() && is_space(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && is_space(text.back()))
        text.remove_suffix(1);
    return std::string(text);
}

bool starts_with(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix)
{
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

namespace {
void escape_bytes(std::string& out, std::string_view bytes)
{
    for (const char c : bytes) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
        out += buf;
    }
}

// The length of the valid UTF-8 sequence at the start of text and its code
// point, or 0 if it is not one (a stray byte, an overlong or cut sequence).
std::size_t utf8_sequence(std::string_view text, char32_t& code)
{
    const auto b0 = static_cast<unsigned char>(text[0]);
    std::size_t length = b0 < 0x80             ? 1
                         : (b0 & 0xe0) == 0xc0 ? 2
                         : (b0 & 0xf0) == 0xe0 ? 3
                         : (b0 & 0xf8) == 0xf0 ? 4
                                               : 0;
    if (length == 0 || length > text.size())
        return 0;
    code = length == 1 ? b0 : b0 & (0x7f >> length);
    for (std::size_t i = 1; i < length; ++i) {
        const auto b = static_cast<unsigned char>(text[i]);
        if ((b & 0xc0) != 0x80)
            return 0;
        code = (code << 6) | (b & 0x3f);
    }
    static const char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
        return 0;
    return length;
}

// Characters a terminal acts on rather than shows: C0 and C1 controls
// (CSI is U+009B), and the invisible marks that reorder text (bidi).
bool is_control(char32_t code)
{
    return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code == 0x200e || code == 0x200f ||
           (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
}
}  // namespace

std::string printable(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        char32_t code = 0;
        const std::size_t length = utf8_sequence(text, code);
        if (length == 0) {
            escape_bytes(out, text.substr(0, 1));  // not UTF-8: a byte an 8-bit terminal may take for C1
            text.remove_prefix(1);
            continue;
        }
        if (is_control(code))
            escape_bytes(out, text.substr(0, length));
        else
            out.append(text.substr(0, length));
        text.remove_prefix(length);
    }
    return out;
}

std::string octal_mode(unsigned mode)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
    return buf;
}

std::string quoted(std::string_view value)
{
    return "'" + printable(value) + "'";
}

namespace {
// Optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of neighbours ("clenaup") each cost one.
std::size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}
}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates)
{
    // Allow one edit per four characters, at least one, at most three: close
    // enough to catch typos, far enough not to suggest nonsense.
    const std::size_t limit = std::min<std::size_t>(3, std::max<std::size_t>(1, word.size() / 4));
    std::string best;
    std::size_t best_distance = limit + 1;
    for (const auto& candidate : candidates) {
        const std::size_t d = edit_distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates)
{
    const std::string match = closest_match(word, candidates);
    return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

bool is_simple_name(std::string_view name, bool allow_dot)
{
    if (name.empty() || !std::isalnum(static_cast<unsigned char>(name.front())))
        return false;
    return std::all_of(name.begin(), name.end(), [allow_dot](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || (allow_dot && c == '.');
    });
}

// A path as it may appear in a one-line message.  Names below the tier root
// are the user's and may hold newlines, so control bytes are escaped; a
// hostile tree thousands of levels deep is shortened in the middle.
std::string shown_path(const std::string& path)
{
    constexpr std::size_t kKeep = 200;
    const std::string text = path.size() > 2 * kKeep ? path.substr(0, kKeep) + "..." + path.substr(path.size() - kKeep)
                                                     : path;
    const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
    return plain ? text : quoted(text);
}

std::pair<std::string, std::string> split_parent(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos)
        return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::string_view base_name(std::string_view path)
{
    const std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view parent_in_tree(std::string_view rel)
{
    const std::size_t slash = rel.rfind('/');
    return slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
}

std::string time_text(std::int64_t seconds, const char* format, bool utc)
{
    const std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    if (utc)
        gmtime_r(&t, &tm);
    else
        localtime_r(&t, &tm);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, format, &tm);
    return std::string(text, n);
}

std::string day_text(std::int64_t seconds)
{
    return time_text(seconds, "%Y-%m-%d", false);
}

std::string moment_text(std::int64_t seconds)
{
    return time_text(seconds, "%Y-%m-%dT%H:%M:%S", false);
}

std::string elapsed_text(std::int64_t seconds)
{
    const long long s = seconds > 0 ? seconds : 0;
    char text[48];
    if (s >= 86400)
        std::snprintf(text, sizeof text, "%lld-%02lld:%02lld:%02lld", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    else if (s >= 3600)
        std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else
        std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
    return text;
}

std::string utc_stamp(std::int64_t seconds)
{
    return time_text(seconds, "%Y%m%dT%H%M%SZ", true);
}

BaseNameZ::BaseNameZ(std::string_view path)
{
    const std::string_view name = base_name(path);
    if (name.size() >= sizeof name_)
        throw Error("a name of " + std::to_string(name.size()) + " bytes is longer than PATH_MAX");
    std::memcpy(name_, name.data(), name.size());
    name_[name.size()] = '\0';
}

}  // namespace dlstage
