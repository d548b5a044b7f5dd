// Small string helpers shared by the config loader, the spec parser and
// the command line.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlstage {

std::vector<std::string> split(std::string_view text, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view text);

// Fields each ended by a NUL, the one byte no file name can hold: root's
// records and a measuring child's answer carry users' names this way, so
// that no name can forge a field.  nul_ended_fields: the fields of such a
// text, nothing (nullopt) when its last field is cut off (no NUL ends it).
void append_nul_ended(std::string& out, std::string_view field);
std::optional<std::vector<std::string>> nul_ended_fields(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);

// Quote a value for a message: 'value', with control bytes shown as \xNN so
// a hostile or broken value cannot break the one-line message.
std::string quoted(std::string_view value);

// The text with what a terminal would act on shown as \xNN (no quotes):
// C0 and C1 control characters, bidi marks and overrides, and bytes that
// are not UTF-8; other UTF-8 text stays as it is.  For logs and listings
// that print values users wrote, which must never inject a line, move the
// cursor or reorder what an admin reads.
std::string printable(std::string_view text);

// A path as it may appear in a one-line message: quoted() if it holds
// control bytes (names users chose may hold newlines), shortened in the
// middle if very long (a hostile tree thousands of levels deep).
std::string shown_path(const std::string& path);

// A path's parent and last name, trailing slashes dropped first:
// "/a/b/" -> ("/a", "b"), "/b" -> ("/", "b"), "b" -> (".", "b").
std::pair<std::string, std::string> split_parent(std::string path);

// The last name of a path as it stands: "/a/b" -> "b", "b" -> "b".
std::string_view base_name(std::string_view path);

// The directory of an entry's path relative to a tree's root, "" for the
// root itself: "a/b/c" -> "a/b", "c" -> "".
std::string_view parent_in_tree(std::string_view rel);

// A file mode's permission bits as ls -l's numbers show them: "0755".
std::string octal_mode(unsigned mode);

// The closest candidate within a small edit distance, or "" if none is
// close: used for "did you mean 'max_bytes'?" hints.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// A time as users read it, in the node's local time zone (what `date`
// shows them): day_text "2026-11-23" for purge dates and listings,
// moment_text "2026-11-23T17:30:00" for scans and changes.  utc_stamp
// "20261123T173000Z" names files, the same on every node whatever its zone.
std::string day_text(std::int64_t seconds);
std::string moment_text(std::int64_t seconds);
std::string utc_stamp(std::int64_t seconds);
// A duration as squeue prints a job's TIME: "0:05", "12:34", "1:02:03",
// "2-03:04:05" (days-hours:minutes:seconds); negative counts as 0.
std::string elapsed_text(std::int64_t seconds);
// strftime's FORMAT for SECONDS, in UTC or local time.
std::string time_text(std::int64_t seconds, const char* format, bool utc);

// True for names made of [A-Za-z0-9_.-] starting with a letter or digit.
bool is_simple_name(std::string_view name, bool allow_dot);

// A path's last name as a C string on the stack, for the *at() calls of
// loops over a million files: no allocation per file.  Throws Error for a
// name of PATH_MAX bytes or more (a plan's paths are shorter).
class BaseNameZ {
public:
    explicit BaseNameZ(std::string_view path);
    const char* c_str() const { return name_; }

private:
    char name_[PATH_MAX];
};

}  // namespace dlstage
