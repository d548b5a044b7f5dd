// What dlstage knows about jobs, read from state_dir for the status views
// (`dlstage status` now; node, dataset and gc views next): which jobs have
// records, and each job's records that the caller may read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

#include <toml++/toml.h>

namespace dlstage {

struct JobRecords {
    std::string job_id;
    std::vector<toml::table> progress;  // one per dataset, by name
    std::vector<toml::table> failures;  // one per failed node
    std::vector<toml::table> prologs;   // the prolog's outcome per node (root wrote it)
    std::vector<toml::table> epilogs;   // the epilog's outcome per node (root wrote it)
    std::optional<uid_t> user;          // who wrote the progress and failure records (the job's user)
    bool empty() const { return progress.empty() && failures.empty() && prologs.empty() && epilogs.empty(); }
};

// The jobs with a directory in state_dir/jobs/, in job id order.
std::vector<std::string> recorded_job_ids(const std::string& state_dir);

// The records of one job that the caller may read (the job's user
// directory is 0700): the stager's progress and failures, and the outcomes
// the prolog and epilog left there, counted only if root owns them (a file
// the user wrote is not root's word).  Empty when there are none.
JobRecords read_job_records(const std::string& state_dir, const std::string& job_id);

}  // namespace dlstage
