#include "job/job_records.hpp"

#include <algorithm>
#include <fcntl.h>
#include <utility>

#include "job/state_record.hpp"
#include "lib/number.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/fd.hpp"

namespace dlstage {

std::vector<std::string> recorded_job_ids(const std::string& state_dir)
{
    std::vector<std::string> ids;
    const Fd dir(::open(jobs_dir(state_dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DirStream entries(dir.get());
    if (!entries.valid())
        return ids;  // no jobs yet, or none we may list
    while (const dirent* e = entries.next())
        if (is_job_id(e->d_name))
            ids.emplace_back(e->d_name);
    std::sort(ids.begin(), ids.end(), job_id_less);
    return ids;
}

JobRecords read_job_records(const std::string& state_dir, const std::string& job_id)
{
    JobRecords job{job_id, {}, {}, {}, {}, std::nullopt};
    for (const auto& [kind, into] :
         {std::pair{UserRecord::Progress, &job.progress}, {UserRecord::Failure, &job.failures}})
        for (UserRecordFile& file : read_user_records(state_dir, job_id, kind)) {
            if (!job.user)
                job.user = file.owner;
            into->push_back(std::move(file.record));
        }
    for (const auto& [kind, into] :
         {std::pair{UserRecord::PrologOutcome, &job.prologs}, {UserRecord::EpilogOutcome, &job.epilogs}})
        for (UserRecordFile& file : read_user_records(state_dir, job_id, kind))
            if (file.owner == 0)
                into->push_back(std::move(file.record));
    return job;
}

}  // namespace dlstage
