#include "lib/job_layout.hpp"

#include <sys/stat.h>

#include "lib/error.hpp"
#include "lib/state_record.hpp"

namespace dlstage {

DatasetLayout dataset_layout(const StageItem& item, const TemplateValues& values)
{
    DatasetLayout layout;
    layout.tier_root = item.tier.path.root();
    layout.tier_dir = tier_directory(item, values);  // as the prolog made it
    const std::string& name = item.dataset.name;  // a simple name: no '/', no ".."
    layout.dataset_dir = layout.tier_dir + "/" + name;
    layout.partial_dir = layout.tier_dir + "/.partial-" + name;
    layout.incoming_dir = layout.tier_dir + "/.incoming-" + name;
    layout.ready_marker = layout.tier_dir + "/.ready-" + name + ".toml";
    layout.image_dir = layout.tier_dir + "/.image-" + name;
    layout.staged_marker = layout.tier_dir + "/.staged-" + name + ".toml";
    return layout;
}

void write_ready_marker(const std::string& marker_path, const ReadyMarker& marker)
{
    write_record(marker_path, toml::table{
                                  {"dataset", marker.dataset},
                                  {"tier", marker.tier},
                                  {"source", marker.source},
                                  {"path", marker.path},
                                  {"bytes", static_cast<std::int64_t>(marker.bytes)},
                                  {"files", static_cast<std::int64_t>(marker.files)},
                              });
}

std::optional<ReadyMarker> read_ready_marker(const std::string& marker_path)
{
    struct stat st {};
    if (lstat(marker_path.c_str(), &st) != 0)
        return std::nullopt;
    if (!S_ISREG(st.st_mode))
        throw Error("ready marker " + marker_path + " is not a regular file");
    const toml::table record = read_record(marker_path);
    ReadyMarker marker;
    marker.dataset = record["dataset"].value_or(std::string());
    marker.tier = record["tier"].value_or(std::string());
    marker.source = record["source"].value_or(std::string());
    marker.path = record["path"].value_or(std::string());
    marker.bytes = static_cast<std::uint64_t>(record["bytes"].value_or(std::int64_t{0}));
    marker.files = static_cast<std::uint64_t>(record["files"].value_or(std::int64_t{0}));
    if (marker.path.empty())
        throw Error("ready marker " + marker_path + " has no path");
    return marker;
}

}  // namespace dlstage
