#include "mover/mover_watch.hpp"

#include <set>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "mover/mover_job.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

namespace {
std::vector<std::string> ids_of(const std::vector<WatchedMover>& movers)
{
    std::vector<std::string> ids;
    for (const WatchedMover& mover : movers)
        ids.push_back(mover.mover_id);
    return ids;
}

// One round over the movers: those that copied (or Slurm forgot) leave the
// list; true when one ended without a copy (its waiters are ended).
bool look_at_movers(std::vector<WatchedMover>& movers, std::set<std::string>& told_held,
                    const std::function<void(const std::string&)>& say)
{
    std::string problem;
    const auto states = ask_job_states(ids_of(movers), problem);
    if (!states)
        return false;  // squeue did not answer: ask again next round
    for (auto it = movers.begin(); it != movers.end();) {
        const auto found = states->find(it->mover_id);
        const JobState now = found == states->end() ? JobState{} : found->second;
        const policy::MoverFate fate = policy::mover_fate(now.state, now.reason);
        const std::string mover = "mover job " + it->mover_id;
        using Kind = policy::MoverFate::Kind;
        if (fate.kind == Kind::Copied || fate.kind == Kind::Gone) {
            it = movers.erase(it);
            continue;
        }
        if (fate.kind == Kind::Ended) {
            // Every job of the user's that waits for it, this one among
            // them (another watch may have ended them all already).
            try {
                end_waiting_jobs(it->mover_id, it->dataset, fate.reason);
                say(it->dataset + ": " + mover + " ended without a copy (" + fate.reason +
                    "): this job is ended; submit it again, and a new mover job copies " + it->dataset);
            } catch (const Error& e) {
                say(it->dataset + ": " + mover + " ended without a copy (" + fate.reason +
                    "), and this job could not be ended (" + e.what() + "): scancel it");
            }
            return true;
        }
        if (fate.held && told_held.insert(it->mover_id).second)
            say(it->dataset + ": " + mover + " is held (" + fate.reason + "): this job waits until it is released");
        if (!fate.held)
            told_held.erase(it->mover_id);
        ++it;
    }
    return false;
}
}  // namespace

WatchedMover parse_watched(const std::string& arg)
{
    const std::vector<std::string> parts = split(arg, ':');
    WatchedMover mover;
    if (parts.size() == 2 || (parts.size() == 3 && parts[2] == "new")) {
        mover.mover_id = parts[0];
        mover.dataset = parts[1];
        mover.submitted = parts.size() == 3;
    }
    if (!is_job_id(mover.mover_id) || mover.dataset.empty())
        throw Error("not a mover job and its dataset (MOVER:NAME[:new]): " + arg);
    return mover;
}

std::string watched_arg(const WatchedMover& mover)
{
    return mover.mover_id + ":" + mover.dataset + (mover.submitted ? ":new" : "");
}

void give_up_mover(const WatchedMover& mover, const std::function<void(const std::string&)>& say)
{
    try {
        if (cancel_unless_awaited(mover.mover_id))
            say(mover.dataset + ": mover job " + mover.mover_id +
                " is cancelled: no job waits for it (this one was not queued, or was given up)");
    } catch (const Error& e) {
        say(mover.dataset + ": mover job " + mover.mover_id + " was left queued: " + e.what());
    }
}

void watch_movers(std::vector<WatchedMover> movers, const ProcessWatch& client, const WatchTiming& timing,
                  const std::function<void(const std::string&)>& say)
{
    std::vector<WatchedMover> submitted;
    for (const WatchedMover& mover : movers)
        if (mover.submitted)
            submitted.push_back(mover);
    std::set<std::string> told_held;
    bool ended = false;
    while (!movers.empty() && !client.ended_within(std::chrono::milliseconds(0))) {
        ended = look_at_movers(movers, told_held, say);
        if (ended || movers.empty())
            break;
        (void)client.ended_within(timing.ask_every);
    }
    // The job was ended: its client leaves soon, and so may other movers.
    if (ended)
        (void)client.ended_within(timing.client_leaves);
    if (client.ended_within(std::chrono::milliseconds(0)))
        for (const WatchedMover& mover : submitted)
            give_up_mover(mover, say);
}

}  // namespace dlstage::mover
