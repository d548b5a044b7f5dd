// The jobs that read a shared copy in place (--stage-data=NAME:scratch:
// DLSTAGE_NAME is the copy itself), and the copies they keep alive.  A
// job that uses the copy leaves a mark, .readers-NAME/JOB, naming the
// copy it was given (NAME, or .version-NAME-JOB2 for one made beside it).
// A later step of the job gets the path its mark names (spank/slurmstepd).
// A change that would rewrite or remove what such a job may still open is
// made beside the copy as a new one, which the record then names
// (policies/shared_copy: change_beside); an older copy goes once none of
// its readers runs (old_copy_may_go).  Whether a reader runs is Slurm's
// answer, asked once per staging; a mark of a job that ended goes with it.
// Rank 0 alone, under the copy's lock: no MPI here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/stage_spec.hpp"
#include "job/copy_record.hpp"
#include "job/job_layout.hpp"

namespace dlstage::stager {

struct CopyReaders {
    bool known = true;                          // Slurm answered (or nobody reads)
    std::map<std::string, std::uint64_t> live;  // per copy (its name in the tier directory): jobs that run
    std::vector<std::string> ended;             // marks of jobs that ended (names in readers_dir)

    std::uint64_t live_of(const std::string& copy) const;
};

// The readers' marks in the directory open as job_dir (here: its names),
// with Slurm's view of their jobs; my_job's own mark is no reader.  Slurm
// is asked when `needed` (a change to make, earlier copies to sweep) or
// when marks piled up; else no reader is known, and none is needed.
CopyReaders look_at_readers(int job_dir, const DatasetLayout& here, const std::string& my_job, bool needed);

// Whether the tier directory holds a copy of the dataset other than `current`.
bool other_copies_exist(int job_dir, const DatasetLayout& here, const std::string& current);

// The copy a record names, as a name in the tier directory: the dataset's
// own name, or a copy made beside it (here.version_prefix + a job id).
// Anything else the record says (the user's file) counts as the former.
std::string copy_in_record(const CopyRecord& record, const DatasetLayout& layout, const DatasetLayout& here);

// Where a new copy goes: the dataset's own name, unless a job that runs
// reads what is there (or Slurm did not say); then beside it, named after
// this job and `now`.
std::string place_for_new_copy(const DatasetLayout& here, const CopyReaders& readers, const std::string& my_job,
                               std::int64_t now);

// job uses mark.copy in place from now on, by mark.path.  Throws Error
// when the mark cannot be written.
void add_reader(int job_dir, const DatasetLayout& layout, const DatasetLayout& here, const std::string& job,
                const ReaderMark& mark);

// Removes the marks of jobs that ended and every copy of the dataset other
// than `current` that no running job reads; says what stays and why.
// Nothing goes while Slurm's answer is unknown.
void sweep_old_copies(int job_dir, const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                      const std::string& current, const CopyReaders& readers);

// The layout with the copy at `copy` (a name in the tier directory).
DatasetLayout with_copy_at(DatasetLayout layout, const std::string& copy);

}  // namespace dlstage::stager
