// How `dlstage status` prints its rows (status/job_status.hpp): columns chosen
// with squeue's -o syntax, cells as Slurm prints times and sizes, and the
// JSON object of --json in the spirit of `squeue --json`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "job/slurm_jobs.hpp"
#include "status/job_status.hpp"

namespace dlstage {

// One column: its -o letter, its header and its cell.
struct StatusField {
    char letter;
    const char* header;
    std::string (*cell)(const StatusRow& row);
};

// Every column, in the order `dlstage status --help` lists them.
const std::vector<StatusField>& status_fields();

// A piece of a format: a literal, or a field with squeue's width: "%8i"
// (at least 8, left-aligned), "%.8i" (right-aligned), "%i" (as long as it
// is).  A field given a width is cut to it, as squeue does.
struct FormatItem {
    std::string literal;
    const StatusField* field = nullptr;
    std::size_t width = 0;
    bool right = false;
};

// squeue's -o text: "%.8i %.9u %d %T", "%%" a '%'.  Throws Error naming
// an unknown letter (listing the known ones) or a '%' without one.
std::vector<FormatItem> parse_status_format(std::string_view text);

// The default listing's fields, printed as aligned columns.
inline constexpr const char* kDefaultStatusFormat = "%i %u %d %P %D %T %p %b %z %f %M %R";

// Under the default listing, where a row's job found its data:
// "imagenet: cache hit on n2 for job 125", "imagenet: cache hit on n1,n3
// (2 of 4 nodes) for job 126"; "" when no node's cache held it.
std::string cache_hit_line(const StatusRow& row);

// One line of a parsed -o format: the header when row is null.
std::string format_line(const std::vector<FormatItem>& items, const StatusRow* row);

// The cells of the format's fields (header when row is null), literals
// left out: for the default listing's aligned columns.
std::vector<std::string> format_cells(const std::vector<FormatItem>& items, const StatusRow* row);

// {"dlstage": {"version": ...}, "time": now}: the "meta" of every --json.
toml::table status_meta(std::string_view version, std::int64_t now);

// {"meta": {"dlstage": {"version"}, "time", "slurm": {"asked", "problem"}},
//  "jobs": [{"job_id": 124, "array_job_id": 123, "array_task_id": 4, ...}]}:
// ids and counts as numbers, times as epoch seconds, sizes in bytes.
toml::table status_json(const std::vector<StatusRow>& rows, const SlurmJobs& slurm, std::string_view version,
                        std::int64_t now);

}  // namespace dlstage
