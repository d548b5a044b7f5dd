// dlstage status --dataset NAME: where the dataset is kept in shared tiers
// (SCRATCH), for whom, how big, when last used, and when the site's purge
// will take it (policies/purge.hpp).  The caller's own copies; root sees
// every user's.
#include <ctime>
#include <iostream>
#include <unistd.h>

#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "job/identity.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/size.hpp"
#include "lib/strings.hpp"
#include "mover/mover_job.hpp"
#include "policies/purge.hpp"
#include "tier/kept_copies.hpp"

namespace dlstage::cli {

namespace {
std::string purge_cell(const Tier& tier, const CopyRecord& r)
{
    const auto date = policy::purge_date(tier.purge, r.oldest);
    if (!date)
        return "-";
    return day_text(*date) + (*date <= std::time(nullptr) ? " (due)" : "");
}

toml::table copy_json(const Tier& tier, const FoundCopy& copy)
{
    toml::table t{{"tier", copy.tier}, {"user", copy.user}, {"record", copy.record_path}};
    if (!copy.record) {
        t.insert("problem", copy.problem);
        return t;
    }
    const CopyRecord& r = *copy.record;
    t.insert("path", r.ready.path);
    t.insert("bytes", static_cast<std::int64_t>(r.ready.bytes));
    t.insert("files", static_cast<std::int64_t>(r.ready.files));
    t.insert("made", r.made);
    t.insert("made_by", r.made_by);
    t.insert("last_use", r.last_use);
    t.insert("uses", static_cast<std::int64_t>(r.uses));
    t.insert("repaired", static_cast<std::int64_t>(r.repaired));
    if (const auto date = policy::purge_date(tier.purge, r.oldest))
        t.insert("purge_date", *date);
    return t;
}
// A reach = "mover" dataset: the caller's mover jobs copying it now, and
// where their output goes.
std::vector<std::string> mover_lines(const Config& config, const std::string& name)
{
    const Dataset* dataset = config.find_dataset(name);
    const Tier* via = dataset ? config.find_tier(dataset->via) : nullptr;
    if (!dataset || dataset->reach != Reach::Mover || !via)
        return {};
    std::vector<std::string> lines;
    try {
        for (const std::string& job : mover::live_mover_jobs(name))
            lines.push_back("mover job " + job + ": copying " + name + " to " + dataset->via +
                            " (output: " + mover::mover_output_path(*via, name, this_user_name()) + ")");
    } catch (const Error& e) {
        lines.push_back("mover jobs unknown: " + printable(e.what()));
    }
    return lines;
}
}  // namespace

int print_copies(const Config& config, const std::string& dataset, bool json, const toml::array* jobs)
{
    const std::vector<FoundCopy> copies = find_copies(config, dataset, this_user_name(), ::geteuid() == 0);
    const std::vector<std::string> movers = mover_lines(config, dataset);
    if (json) {
        toml::array list;
        for (const FoundCopy& copy : copies)
            list.push_back(copy_json(config.tiers.at(copy.tier), copy));
        toml::array mover_list;
        for (const std::string& line : movers)
            mover_list.push_back(line);
        toml::table object{{"dataset", dataset}, {"copies", list}, {"movers", mover_list}};
        if (jobs)
            object.insert("jobs", *jobs);
        std::cout << toml::json_formatter{object} << "\n";
        return kExitOk;
    }
    for (const std::string& line : movers)
        std::cout << line << "\n";
    if (copies.empty()) {
        std::cout << "no copies of " << quoted(dataset) << " in shared tiers\n";
        return kExitOk;
    }
    // Records are the users' files: nothing in them may forge a line.
    std::vector<std::vector<std::string>> rows = {
        {"DATASET", "TIER", "USER", "SIZE", "FILES", "MADE", "LAST USE", "USES", "PURGE", "PATH"}};
    for (const FoundCopy& copy : copies) {
        if (!copy.record) {
            rows.push_back({dataset, copy.tier, printable(copy.user), "-", "-", "-", "-", "-", "-",
                            "unreadable: " + printable(copy.problem)});
            continue;
        }
        const CopyRecord& r = *copy.record;
        rows.push_back({dataset, copy.tier, printable(copy.user), format_size(r.ready.bytes),
                        std::to_string(r.ready.files), day_text(r.made), day_text(r.last_use), std::to_string(r.uses),
                        purge_cell(config.tiers.at(copy.tier), r), printable(r.ready.path)});
    }
    print_aligned(std::cout, rows);
    return kExitOk;
}

}  // namespace dlstage::cli
