#include "stager/copies/copy_readers.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/slurm_jobs.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/dir_fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/replace_file.hpp"
#include "lib/sys/sys_error.hpp"
#include "lib/sys/tree_remover.hpp"
#include "policies/shared_copy.hpp"
#include "policies/slurm_states.hpp"

namespace dlstage::stager {

namespace {
constexpr int kSqueueSeconds = 30;
// Marks (one per job that used the copy) kept before Slurm is asked which
// of them ended, when no change asks anyway.
constexpr std::size_t kMarksBeforeSweep = 64;

// The readers' directory, the user's own; an invalid Fd when there is none
// (or it is someone else's: it then says nothing of the user's jobs).
Fd open_readers(int job_dir, const DatasetLayout& here)
{
    Fd dir(::openat(job_dir, here.readers_dir.c_str(), kDirFlags));
    struct stat st {};
    if (dir.valid() && (::fstat(dir.get(), &st) != 0 || st.st_uid != ::geteuid()))
        return Fd();
    return dir;
}

// NAME, or NAME's prefix and then JOB-SECONDS (a job may run again, as
// a requeue, and make another).
bool is_copy_name(const std::string& name, const DatasetLayout& here)
{
    if (name == here.dataset_dir)
        return true;
    if (!starts_with(name, here.version_prefix))
        return false;
    const std::string rest = name.substr(here.version_prefix.size());
    return !rest.empty() && rest.find_first_not_of("0123456789_-") == std::string::npos;
}
// The dataset's copies in the tier directory other than `current`.
std::vector<std::string> copies_besides(int job_dir, const DatasetLayout& here, const std::string& current)
{
    const Fd reading(::openat(job_dir, ".", kDirFlags));
    std::vector<std::string> copies;
    DirStream stream(reading.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr)
        if (is_copy_name(e->d_name, here) && e->d_name != current)
            copies.push_back(e->d_name);
    return copies;
}
}  // namespace

std::uint64_t CopyReaders::live_of(const std::string& copy) const
{
    const auto found = live.find(copy);
    return found == live.end() ? 0 : found->second;
}

CopyReaders look_at_readers(int job_dir, const DatasetLayout& here, const std::string& my_job, bool needed)
{
    CopyReaders readers;
    const Fd dir = open_readers(job_dir, here);
    if (!dir.valid())
        return readers;
    std::map<std::string, std::string> copy_of;  // job -> the copy it reads
    DirStream stream(dir.get());
    while (const dirent* e = stream.valid() ? stream.next() : nullptr) {
        const std::string job = e->d_name;
        if (!is_job_id(job) || job == my_job)
            continue;
        std::optional<SmallFile> mark;
        try {
            mark = read_small_file_at(dir.get(), job, here.readers_dir + "/" + job, 4096, ::geteuid());
        } catch (const Error&) {
            continue;  // not a mark of the user's jobs
        }
        if (mark)
            if (const std::optional<ReaderMark> parsed = reader_mark_of(mark->content))
                copy_of[job] = parsed->copy;
    }
    // Nothing to decide: Slurm is asked only to clear marks that piled up.
    if (copy_of.empty() || (!needed && copy_of.size() < kMarksBeforeSweep))
        return readers;
    std::vector<std::string> ids;
    for (const auto& [job, copy] : copy_of)
        ids.push_back(job);
    std::string problem;
    const auto states = ask_job_states(ids, kSqueueSeconds, problem);
    if (!states) {
        readers.known = false;  // every reader counts as running
        for (const auto& [job, copy] : copy_of)
            readers.live[copy] += 1;
        return readers;
    }
    for (const auto& [job, copy] : copy_of) {
        const auto found = states->find(job);
        if (found != states->end() && policy::slurm_state_is_live(found->second.state))
            readers.live[copy] += 1;
        else
            readers.ended.push_back(job);  // ended, or forgotten by Slurm
    }
    return readers;
}

std::string copy_in_record(const CopyRecord& record, const DatasetLayout& layout, const DatasetLayout& here)
{
    const std::string prefix = layout.tier_dir + "/";
    if (!starts_with(record.ready.path, prefix))
        return here.dataset_dir;
    const std::string rest = record.ready.path.substr(prefix.size());
    const std::string first = rest.substr(0, rest.find('/'));
    return is_copy_name(first, here) ? first : here.dataset_dir;
}

std::string place_for_new_copy(const DatasetLayout& here, const CopyReaders& readers, const std::string& my_job,
                               std::int64_t now)
{
    if (readers.known && readers.live_of(here.dataset_dir) == 0)
        return here.dataset_dir;
    // A job that runs again (requeued) keeps its id: the time tells its
    // copies apart, so none replaces one that others read.
    return here.version_prefix + my_job + "-" + std::to_string(now);
}

bool other_copies_exist(int job_dir, const DatasetLayout& here, const std::string& current)
{
    return !copies_besides(job_dir, here, current).empty();
}

void add_reader(int job_dir, const DatasetLayout& layout, const DatasetLayout& here, const std::string& job,
                const ReaderMark& mark)
{
    if (::mkdirat(job_dir, here.readers_dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw_cannot("create", layout.readers_dir, errno);
    const Fd dir = open_readers(job_dir, here);
    if (!dir.valid())
        throw Error("cannot use " + layout.readers_dir + ": not a directory of yours; remove it");
    replace_file_at(dir.get(), layout.readers_dir, job, reader_mark_text(mark), 0600);
}

void sweep_old_copies(int job_dir, const StageItem& item, const DatasetLayout& layout, const DatasetLayout& here,
                      const std::string& current, const CopyReaders& readers)
{
    if (!readers.known) {
        say(item.dataset.name + ": squeue did not answer: which jobs still read earlier copies is unknown, so "
                                "none is removed");
        return;
    }
    if (!readers.ended.empty()) {
        const Fd dir = open_readers(job_dir, here);
        for (const std::string& job : readers.ended)
            if (dir.valid())
                ::unlinkat(dir.get(), job.c_str(), 0);  // gone already: another job swept it
    }
    for (const std::string& copy : copies_besides(job_dir, here, current)) {
        const std::uint64_t live = readers.live_of(copy);
        if (!policy::old_copy_may_go(live, readers.known)) {
            sayf("%s: the earlier copy %s/%s stays while %llu running %s it", item.dataset.name.c_str(),
                 layout.tier_dir.c_str(), copy.c_str(), static_cast<unsigned long long>(live),
                 live == 1 ? "job reads" : "jobs read");
            continue;
        }
        const RemoveResult removed = remove_tree_at(job_dir, copy, layout.tier_dir);
        if (!removed.ok())
            say(item.dataset.name + ": the earlier copy " + layout.tier_dir + "/" + copy +
                " stays: " + removed.problems.front());
    }
}

DatasetLayout with_copy_at(DatasetLayout layout, const std::string& copy)
{
    layout.dataset_dir = layout.tier_dir == "." ? copy : layout.tier_dir + "/" + copy;
    return layout;
}

}  // namespace dlstage::stager
