#include "status/status_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "lib/error.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"

namespace dlstage {

namespace {
bool has_progress(const StatusRow& r)
{
    return r.bytes_total > 0 || r.state == StagingState::Ready || r.state == StagingState::Reused ||
           r.state == StagingState::CacheHit;
}

std::string dash_if_empty(std::string text)
{
    return text.empty() ? "-" : text;
}

std::string progress_cell(const StatusRow& r)
{
    return has_progress(r) ? std::to_string(r.percent()) + "%" : "-";
}

std::string rate_cell(const StatusRow& r)
{
    if (!(r.bytes_per_s >= 1.0) || !std::isfinite(r.bytes_per_s))
        return "-";
    return slurm_size(static_cast<std::uint64_t>(std::min(r.bytes_per_s, 1e18))) + "/s";
}

std::string eta_cell(const StatusRow& r)
{
    return r.state == StagingState::Staging && r.eta_s > 0
               ? elapsed_text(static_cast<std::int64_t>(std::min(r.eta_s, 1e12)))
               : "-";
}

std::string reason_or_nodes(const StatusRow& r)
{
    return r.reason.empty() ? dash_if_empty(r.nodelist) : "(" + r.reason + ")";
}

// The nodes that hit, as many as a line holds: "n1,n2", "n1,...,n8 and 56 more".
std::string hit_nodes_text(const StatusRow& r)
{
    constexpr std::size_t kNamed = 8;
    if (r.cache_hits.size() <= kNamed)
        return join(r.cache_hits, ",");
    const std::vector<std::string> named(r.cache_hits.begin(), r.cache_hits.begin() + kNamed);
    return join(named, ",") + " and " + std::to_string(r.cache_hits.size() - kNamed) + " more";
}

std::int64_t whole_seconds(double seconds)
{
    return static_cast<std::int64_t>(std::min(seconds, 1e12));
}
}  // namespace

const std::vector<StatusField>& status_fields()
{
    static const std::vector<StatusField> fields = {
        {'i', "JOBID", [](const StatusRow& r) { return r.shown_id(); }},
        {'A', "JOBID", [](const StatusRow& r) { return r.job_id; }},
        {'u', "USER", [](const StatusRow& r) { return dash_if_empty(r.user); }},
        {'d', "DATASET", [](const StatusRow& r) { return r.dataset; }},
        {'P', "TIER", [](const StatusRow& r) { return r.shares.empty() ? r.tier : r.tier + ":split"; }},
        {'D', "NODES", [](const StatusRow& r) { return std::to_string(r.nodes); }},
        {'T', "STATE", [](const StatusRow& r) { return std::string(state_word(r.state)); }},
        {'p', "DONE", progress_cell},
        {'b', "RATE", rate_cell},
        {'z', "SIZE", [](const StatusRow& r) { return has_progress(r) ? slurm_size(r.bytes_total) : "-"; }},
        {'f', "FILES", [](const StatusRow& r) { return has_progress(r) ? std::to_string(r.files) : "-"; }},
        {'M', "TIME", [](const StatusRow& r) { return elapsed_text(whole_seconds(r.elapsed_s)); }},
        {'e', "ETA", eta_cell},
        {'N', "NODELIST", [](const StatusRow& r) { return dash_if_empty(r.nodelist); }},
        {'r', "REASON", [](const StatusRow& r) { return dash_if_empty(r.reason); }},
        {'R', "NODELIST(REASON)", reason_or_nodes},
        {'H', "CACHEHIT", [](const StatusRow& r) { return r.cache_hits.empty() ? "-" : hit_nodes_text(r); }},
        {'U', "UPDATED", [](const StatusRow& r) { return r.updated > 0 ? moment_text(r.updated) : "-"; }},
    };
    return fields;
}

std::vector<FormatItem> parse_status_format(std::string_view text)
{
    std::vector<FormatItem> items;
    std::string literal;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            literal += text[i];
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '%') {
            literal += '%';
            ++i;
            continue;
        }
        FormatItem item;
        std::size_t j = i + 1;
        if (j < text.size() && text[j] == '.')
            item.right = true, ++j;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9' && item.width < 1000)
            item.width = item.width * 10 + static_cast<std::size_t>(text[j++] - '0');
        if (j == text.size())
            throw Error("format " + quoted(text) + " ends in a '%' without a field letter");
        for (const StatusField& field : status_fields())
            if (field.letter == text[j])
                item.field = &field;
        if (!item.field) {
            std::string letters;
            for (const StatusField& field : status_fields())
                letters += std::string(letters.empty() ? "" : " ") + "%" + field.letter;
            throw Error("format " + quoted(text) + ": unknown field %" + printable(std::string(1, text[j])) +
                        " (known: " + letters + ")");
        }
        if (!literal.empty())
            items.push_back({literal, nullptr, 0, false}), literal.clear();
        items.push_back(item);
        i = j;
    }
    if (!literal.empty())
        items.push_back({literal, nullptr, 0, false});
    return items;
}

std::string format_line(const std::vector<FormatItem>& items, const StatusRow* row)
{
    std::string line;
    for (const FormatItem& item : items) {
        if (!item.field) {
            line += item.literal;
            continue;
        }
        std::string cell = row ? item.field->cell(*row) : item.field->header;
        if (item.width > 0) {
            if (cell.size() > item.width)
                cell.resize(item.width);
            const std::string pad(item.width - cell.size(), ' ');
            cell = item.right ? pad + cell : cell + pad;
        }
        line += cell;
    }
    return line;
}

std::vector<std::string> format_cells(const std::vector<FormatItem>& items, const StatusRow* row)
{
    std::vector<std::string> cells;
    for (const FormatItem& item : items)
        if (item.field)
            cells.push_back(row ? item.field->cell(*row) : item.field->header);
    return cells;
}

namespace {
// An id as a number; the row's ids are digits (checked job directory
// names, squeue's or root's records), anything else is left out.
void insert_id(toml::table& t, const char* key, const std::string& digits)
{
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
        return;
    t.insert(key, static_cast<std::int64_t>(std::stoll(digits)));
}

toml::table row_json(const StatusRow& r)
{
    toml::table t;
    insert_id(t, "job_id", r.job_id);
    insert_id(t, "array_job_id", r.array_job_id);
    insert_id(t, "array_task_id", r.array_task_id);
    t.insert("user", r.user);
    if (r.uid)
        t.insert("user_id", *r.uid);
    t.insert("dataset", r.dataset);
    const auto clamp64 = [](std::uint64_t v) {
        return static_cast<std::int64_t>(std::min<std::uint64_t>(v, INT64_MAX));
    };
    t.insert("tier", r.tier);
    t.insert("placement", r.shares.empty() ? "whole" : "split");
    if (!r.shares.empty()) {
        toml::array shares;
        for (const std::uint64_t bytes : r.shares)
            shares.push_back(clamp64(bytes));
        t.insert("shares", std::move(shares));
    }
    t.insert("nodes", r.nodes);
    t.insert("nodelist", r.nodelist);
    toml::array hits;
    for (const std::string& node : r.cache_hits)
        hits.push_back(node);
    t.insert("cache_hits", std::move(hits));
    t.insert("state", state_word(r.state));
    t.insert("reason", r.reason);
    t.insert("bytes_total", clamp64(r.bytes_total));
    t.insert("bytes_done", clamp64(r.bytes_done));
    t.insert("percent", static_cast<std::int64_t>(r.percent()));
    t.insert("files", clamp64(r.files));
    t.insert("elapsed_s", whole_seconds(r.elapsed_s));
    t.insert("bytes_per_s", clamp64(static_cast<std::uint64_t>(std::min(r.bytes_per_s, 9e18))));
    t.insert("eta_s", whole_seconds(r.eta_s));
    t.insert("updated", r.updated);
    return t;
}
}  // namespace

std::string cache_hit_line(const StatusRow& row)
{
    if (row.cache_hits.empty())
        return "";
    std::string line = row.dataset + ": cache hit on " + hit_nodes_text(row);
    const auto hits = static_cast<std::int64_t>(row.cache_hits.size());
    if (row.nodes > hits)
        line += " (" + std::to_string(hits) + " of " + std::to_string(row.nodes) + " nodes)";
    return line + " for job " + row.shown_id();
}

toml::table status_meta(std::string_view version, std::int64_t now)
{
    return toml::table{{"dlstage", toml::table{{"version", version}}}, {"time", now}};
}

toml::table status_json(const std::vector<StatusRow>& rows, const SlurmJobs& slurm, std::string_view version,
                        std::int64_t now)
{
    toml::array jobs;
    for (const StatusRow& row : rows)
        jobs.push_back(row_json(row));
    toml::table meta = status_meta(version, now);
    meta.insert("slurm", toml::table{{"asked", slurm.asked}, {"problem", slurm.problem}});
    return toml::table{{"meta", meta}, {"jobs", jobs}};
}

}  // namespace dlstage
