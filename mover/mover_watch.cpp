#include "mover/mover_watch.hpp"

#include <set>
#include <thread>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "mover/mover_job.hpp"
#include "policies/two_hop.hpp"

namespace dlstage::mover {

namespace {
using Clock = std::chrono::steady_clock;

// Sleeps `span` in steps of `step`; false as soon as the client is gone.
bool client_stays(pid_t client, std::chrono::milliseconds span, std::chrono::milliseconds step)
{
    const Clock::time_point until = Clock::now() + span;
    while (::getppid() == client) {
        if (Clock::now() >= until)
            return true;
        std::this_thread::sleep_for(step);
    }
    return false;
}

std::vector<std::string> ids_of(const std::vector<WatchedMover>& movers)
{
    std::vector<std::string> ids;
    for (const WatchedMover& mover : movers)
        ids.push_back(mover.mover_id);
    return ids;
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

void watch_movers(std::vector<WatchedMover> movers, pid_t client, const WatchTiming& timing,
                  const std::function<void(const std::string&)>& say)
{
    std::vector<WatchedMover> submitted;
    for (const WatchedMover& mover : movers)
        if (mover.submitted)
            submitted.push_back(mover);
    std::set<std::string> told_held;
    while (!movers.empty() && ::getppid() == client) {
        std::string problem;
        const auto states = ask_job_states(ids_of(movers), problem);
        for (auto it = movers.begin(); states && it != movers.end();) {
            const auto found = states->find(it->mover_id);
            const JobState now = found == states->end() ? JobState{} : found->second;
            const policy::MoverFate fate = policy::mover_fate(now.state, now.reason);
            const std::string mover = "mover job " + it->mover_id;
            if (fate.kind == policy::MoverFate::Kind::Copied) {
                it = movers.erase(it);
                continue;
            }
            if (fate.kind == policy::MoverFate::Kind::Ended) {
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
                return;  // this job is ended: nothing more to watch for it
            }
            if (fate.held && told_held.insert(it->mover_id).second)
                say(it->dataset + ": " + mover + " is held (" + fate.reason + "): this job waits until it is released");
            if (!fate.held)
                told_held.erase(it->mover_id);
            ++it;
        }
        if (movers.empty())
            return;
        if (!client_stays(client, timing.ask_every, timing.look_every))
            break;
    }
    if (::getppid() != client)
        for (const WatchedMover& mover : submitted)
            give_up_mover(mover, say);
}

}  // namespace dlstage::mover
