#include "mover/via_copy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "policies/purge.hpp"

namespace dlstage::mover {

ViaCopy look_at_via_copy(const Config& config, const Dataset& dataset, const std::string& user,
                         std::int64_t manifest_scanned, std::int64_t now)
{
    ViaCopy copy;
    copy.facts.now = now;
    copy.facts.manifest_scanned = manifest_scanned;
    copy.facts.immutable = dataset.immutable;
    const Tier* via = config.find_tier(dataset.via);
    if (!via)
        return copy;
    copy.record_path = copy_record_path(*via, dataset.name, user);
    try {
        copy.record = read_copy_record(copy.record_path);
    } catch (const Error& e) {
        copy.problem = e.what();
    }
    if (!copy.record)
        return copy;
    const CopyRecord& record = *copy.record;
    copy.facts.has_record = true;
    copy.facts.same_mode = record.mode == to_string(dataset.mode);
    copy.facts.checked_scan = record.checked_scan;
    copy.facts.found_changed = record.found_changed != 0;
    copy.facts.purge_date = policy::purge_date(via->purge, record.oldest);
    // The copy itself, the user's, below the user's directory of the tier.
    const std::string dir = via->path.expand({"", user, ""});
    struct stat st {};
    const std::string& path = record.ready.path;
    const bool below = starts_with(path, dir + "/") && path.find("/../") == std::string::npos &&
                       !ends_with(path, "/..");
    copy.facts.in_place = below && ::lstat(path.c_str(), &st) == 0 && st.st_uid == ::geteuid();
    return copy;
}

}  // namespace dlstage::mover
