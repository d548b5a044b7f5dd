#include "mover/mover_waits.hpp"

#include <map>

#include "job/slurm_jobs.hpp"
#include "lib/contract.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "mover/mover_job.hpp"

namespace dlstage::mover {

std::vector<MoverWait> waits_in_comment(const std::string& comment)
{
    std::vector<MoverWait> waits;
    if (starts_with(comment, kMoverFailedComment)) {
        // "dlstage: mover job 7 for in21k failed: REASON"
        const std::string rest = comment.substr(std::string(kMoverFailedComment).size());
        const auto for_at = rest.find(" for ");
        const auto failed_at = rest.find(" failed: ");
        if (for_at == std::string::npos || failed_at == std::string::npos || failed_at < for_at)
            return waits;
        MoverWait wait;
        wait.mover_id = rest.substr(0, for_at);
        wait.dataset = rest.substr(for_at + 5, failed_at - for_at - 5);
        wait.failed = true;
        wait.reason = rest.substr(failed_at + 9);
        if (is_job_id(wait.mover_id) && !wait.dataset.empty())
            waits.push_back(wait);
        return waits;
    }
    const auto at = comment.find(kWaitsComment);  // after the user's own comment, if any
    if (at == std::string::npos)
        return waits;
    // "7 (in21k:shm), 9 (far:ssd)"
    for (const std::string& entry : split(comment.substr(at + std::string(kWaitsComment).size()), ',')) {
        const std::string text = trim(entry);
        const auto open = text.find(" (");
        if (open == std::string::npos || text.back() != ')')
            continue;
        MoverWait wait;
        wait.mover_id = text.substr(0, open);
        const std::string what = text.substr(open + 2, text.size() - open - 3);
        const auto colon = what.find(':');
        wait.dataset = what.substr(0, colon);
        wait.tier = colon == std::string::npos ? "" : what.substr(colon + 1);
        if (is_job_id(wait.mover_id) && !wait.dataset.empty())
            waits.push_back(wait);
    }
    return waits;
}

std::vector<MoverWait> parse_mover_waits(std::string_view squeue, const std::set<std::string>* known)
{
    std::vector<MoverWait> waits;
    std::map<std::string, int> lines_of;  // a job id on two lines: one of them is forged
    for (const std::string& line : split(squeue, '\n')) {
        std::vector<std::string> f = split(line, '|');
        if (f.size() < 4 || !is_job_id(f[0]))
            continue;
        ++lines_of[f[0]];
        // The comment is last: it may hold '|' itself.
        std::vector<std::string> comment_parts(f.begin() + 3, f.end());
        for (MoverWait& wait : waits_in_comment(join(comment_parts, "|"))) {
            wait.job_id = f[0];
            wait.user = printable(f[1]);
            wait.state = f[2];
            wait.dataset = printable(wait.dataset);
            wait.tier = printable(wait.tier);
            wait.reason = printable(wait.reason);
            waits.push_back(std::move(wait));
        }
    }
    if (!known)
        return waits;
    // A forged line names an id that is not Slurm's, or one whose own line
    // is there too.  (The state may move between the two answers.)
    std::vector<MoverWait> confirmed;
    for (MoverWait& wait : waits)
        if (lines_of[wait.job_id] == 1 && known->count(wait.job_id))
            confirmed.push_back(std::move(wait));
    return confirmed;
}

std::vector<MoverWait> ask_mover_waits(std::string& problem, const SlurmJobs& slurm)
{
    const auto answer =
        slurm_answer(bounded_command({"squeue", "--noheader", "--all", "--states=all", "--format=%A|%u|%T|%k"},
                                     kSlurmTimeout),
                     "squeue", kSlurmTimeout, problem);
    if (!answer)
        return {};
    std::set<std::string> known;
    for (const auto& [id, job] : slurm.jobs)
        known.insert(id);
    std::vector<MoverWait> waits = parse_mover_waits(*answer, &known);
    // Why a pending mover job waits (held, its partition down, priority):
    // one more squeue, only when a job waits.
    std::vector<std::string> movers;
    for (const MoverWait& wait : waits)
        if (!wait.failed && wait.state == "PENDING")
            movers.push_back(wait.mover_id);
    std::string unasked;
    const auto now = movers.empty() ? std::nullopt : ask_job_states(movers, unasked);
    if (!now)
        return waits;
    for (MoverWait& wait : waits)
        if (const auto found = now->find(wait.mover_id); found != now->end() && found->second.reason != "None")
            wait.mover_reason = printable(found->second.reason);
    return waits;
}

}  // namespace dlstage::mover
