#include "mover/mover_job.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/slurm_jobs.hpp"
#include "job/slurm_nodes.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/process.hpp"
#include "policies/two_hop.hpp"

extern char** environ;

namespace dlstage::mover {

namespace {
// A Slurm command's answer, or Error naming it and why not.
std::string ask(const std::vector<std::string>& argv, const std::string& what)
{
    const std::vector<std::string> env = submit_environment(environ);
    std::string problem;
    const auto answer =
        slurm_answer(bounded_command(argv, kSlurmTimeout), argv.front(), kSlurmTimeout, problem, nullptr, &env);
    if (!answer)
        throw Error("cannot " + what + ": " + problem);
    return *answer;
}

// One of the caller's queued or running mover jobs, as squeue lists it.
struct LiveMover {
    std::string id;
    std::string state;
    bool ending = false;  // it marked itself as ending without a copy (mark_ending)
};

// The caller's queued or running mover jobs for dataset ("%A %T %k": the
// comment, last, may be empty or hold spaces).
std::vector<LiveMover> live_movers(const std::string& dataset)
{
    std::vector<LiveMover> movers;
    for (const std::string& line :
         split(ask({"squeue", "--me", "--noheader", "--name=" + mover_job_name(dataset),
                    "--states=PENDING,CONFIGURING,RUNNING,REQUEUED,RESIZING,SUSPENDED", "--format=%A %T %k"},
                   "ask squeue for mover jobs of " + quoted(dataset)),
               '\n')) {
        const std::vector<std::string> f = split(trim(line), ' ');
        if (f.size() >= 2 && is_job_id(f[0]))
            movers.push_back({f[0], f[1], line.find(kMoverEndingComment) != std::string::npos});
    }
    return movers;
}

// The live mover jobs of the dataset a job may wait for (policy::
// may_share_mover; not one that marked itself as ending without a copy).
std::vector<std::string> sharable_movers(const Dataset& dataset)
{
    std::vector<std::string> ids;
    for (const LiveMover& mover : live_movers(dataset.name))
        if (!mover.ending && policy::may_share_mover(dataset, mover.state))
            ids.push_back(mover.id);
    return ids;
}

// Does a dependency term ("afterok:5:123(unfulfilled)", "afterok:123_*(failed)")
// wait for mover_id's success?
bool waits_on(const std::string& term, const std::string& mover_id)
{
    if (!starts_with(term, "afterok:"))
        return false;
    for (const std::string& part : split(term.substr(8), ':'))
        if (part.substr(0, part.find_first_of("(_+")) == mover_id)
            return true;
    return false;
}

// The turn below is per host: submits on two login nodes at once can both
// find no mover job and submit one each.  After submitting, every one of
// them keeps the oldest (the lowest id) and cancels its own if that is
// another: each sees its own job in the list, so one always stays.
MoverJob one_mover_left(const Dataset& dataset, const std::string& mine)
{
    std::vector<std::string> live;
    try {
        live = sharable_movers(dataset);
    } catch (const Error&) {
        return {mine, true};  // not known: two copies at worst, the second reuses the first
    }
    live.push_back(mine);  // whatever its state now
    const auto oldest = std::min_element(live.begin(), live.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    if (oldest == live.end() || *oldest == mine || !is_job_id(*oldest))
        return {mine, true};
    try {
        cancel_job(mine);
    } catch (const Error&) {
        return {mine, true};
    }
    return {*oldest, false};
}

// Submits from one host take turns: a lock file of the user's own in
// XDG_RUNTIME_DIR (or /tmp), held until the mover job is queued.  One that
// is not the user's (planted in /tmp) or cannot be had in time is done
// without: a second mover job then finds the copy made and reuses it.
class SubmitTurn {
public:
    SubmitTurn()
    {
        const char* runtime = std::getenv("XDG_RUNTIME_DIR");
        const std::string dir = runtime && *runtime == '/' ? runtime : "/tmp";
        const std::string path = dir + "/dlstage-movers-" + std::to_string(::geteuid()) + ".lock";
        Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600));
        struct stat st {};
        if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
            return;
        for (int i = 0; i < 100; ++i) {
            if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
                fd_ = std::move(fd);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

private:
    Fd fd_;  // closing it unlocks
};
}  // namespace

std::string mover_job_name(const std::string& dataset)
{
    return kMoverJobPrefix + dataset;
}

std::string mover_output_path(const Tier& via, const std::string& dataset, const std::string& user)
{
    return via.path.expand({"", user, ""}) + "/" + kMoverOutputPrefix + dataset + ".out";
}

std::vector<std::string> submit_environment(const char* const* env)
{
    std::vector<std::string> kept;
    for (; env && *env; ++env) {
        const std::string entry = *env;
        const bool slurms = starts_with(entry, "SLURM_") && !starts_with(entry, "SLURM_CONF=");
        if (slurms || starts_with(entry, "SBATCH_") || starts_with(entry, "SALLOC_") || starts_with(entry, "SRUN_") ||
            starts_with(entry, kPrologEnvPrefix))
            continue;
        kept.push_back(entry);
    }
    return kept;
}

std::vector<std::string> mover_sbatch_argv(const MoverSettings& mover, const Dataset& dataset,
                                           const std::string& output)
{
    std::vector<std::string> argv = {"sbatch",
                                     "--parsable",
                                     "--job-name=" + mover_job_name(dataset.name),
                                     "--partition=" + mover.partition,
                                     "--nodes=" + std::to_string(mover.nodes),
                                     "--ntasks-per-node=1",
                                     "--cpus-per-task=" + std::to_string(mover.cpus_per_task),
                                     "--output=" + output,
                                     "--open-mode=truncate",
                                     "--requeue",  // a node lost: Slurm runs it again, the copy resumes
                                     "--chdir=/",  // the submit directory may not exist on the mover nodes
                                     "--stage-data=" + dataset.name + ":" + dataset.via};
    if (!mover.memory.empty())
        argv.push_back("--mem=" + mover.memory);
    if (!mover.account.empty())
        argv.push_back("--account=" + mover.account);
    if (!mover.qos.empty())
        argv.push_back("--qos=" + mover.qos);
    if (!mover.time_limit.empty())
        argv.push_back("--time=" + mover.time_limit);
    // The copy is made before the script runs (the plugin stages in the
    // batch step); the script only says so.
    argv.push_back("--wrap=echo dlstage: " + dataset.name + " is in " + dataset.via);
    return argv;
}

std::vector<std::string> parse_job_ids(std::string_view squeue)
{
    std::vector<std::string> ids;
    for (const std::string& line : split(squeue, '\n')) {
        const std::string id = trim(line);
        if (id.empty())
            continue;
        if (!is_job_id(id))
            throw Error("squeue's answer is not job ids (it begins: " + first_line(std::string(squeue)) + ")");
        ids.push_back(id);
    }
    return ids;
}

std::vector<std::string> parse_waiting_jobs(std::string_view squeue, const std::string& mover_id)
{
    std::vector<std::string> waiting;
    for (const std::string& line : split(squeue, '\n')) {
        const std::vector<std::string> f = split(trim(line), '|');
        if (f.size() != 2 || !is_job_id(f[0]))
            continue;
        const std::vector<std::string> terms = split(f[1], ',');  // "afterok:123(unfulfilled),afterany:7"
        if (std::any_of(terms.begin(), terms.end(), [&](const std::string& t) { return waits_on(t, mover_id); }))
            waiting.push_back(f[0]);
    }
    return waiting;
}

std::vector<std::string> live_mover_jobs(const std::string& dataset)
{
    std::vector<std::string> jobs;
    for (const LiveMover& mover : live_movers(dataset))
        jobs.push_back(printable(mover.id + " " + mover.state + (mover.ending ? " (ending without a copy)" : "")));
    return jobs;
}

std::vector<policy::PartitionNode> mover_partition_nodes(const std::string& partition)
{
    const std::vector<std::string> env = submit_environment(environ);
    std::string problem;
    const auto rows = ask_partition_nodes(partition, kSlurmTimeout, problem, &env);
    if (!rows)
        throw Error("cannot ask sinfo for the nodes of partition " + quoted(partition) + ": " + problem);
    std::vector<policy::PartitionNode> nodes;
    for (const PartitionNodeRow& row : *rows)
        nodes.push_back({row.node, row.cpus, row.memory_mib});
    return nodes;
}

policy::Verdict mover_settings_fit(const MoverSettings& mover)
{
    return policy::mover_fits_nodes(mover, mover_partition_nodes(mover.partition));
}

namespace {
// sbatch refused the mover job: when it is because no node of the
// partition gives what [mover] asks, the words name that setting (what
// the admins can change), not only Slurm's bare line.
[[noreturn]] void refused_mover(const Config& config, const Dataset& dataset, const Error& refusal)
{
    const std::string said = refusal.what();
    if (said.find(policy::kNoNodeConfiguration) == std::string::npos)
        throw refusal;
    std::string why = "[mover] cpus_per_task = " + std::to_string(config.mover.cpus_per_task) +
                      (config.mover.memory.empty() ? "" : " or memory = " + quoted(config.mover.memory)) +
                      " asks more than the nodes of partition " + quoted(config.mover.partition) + " have";
    try {
        if (const policy::Verdict fits = mover_settings_fit(config.mover); !fits.allowed)
            why = fits.reason;
    } catch (const Error&) {
        // sinfo did not answer: the settings Slurm may have refused, both named
    }
    throw Error("cannot submit a mover job for " + quoted(dataset.name) + ": Slurm refused it (" +
                policy::kNoNodeConfiguration + "): " + why + " in " + config.file + "; ask your site admins");
}
}  // namespace

MoverJob ensure_mover(const Config& config, const Dataset& dataset, const std::string& user)
{
    const Tier* via = config.find_tier(dataset.via);
    if (!via || !config.mover.configured())
        throw Error(quoted(dataset.name) + " has no mover partition or via tier: ask your site admins");
    const SubmitTurn turn;
    if (const auto shared = sharable_movers(dataset); !shared.empty())
        return {shared.front(), false};
    std::string answer;
    try {
        answer = ask(mover_sbatch_argv(config.mover, dataset, mover_output_path(*via, dataset.name, user)),
                     "submit a mover job for " + quoted(dataset.name));
    } catch (const Error& e) {
        refused_mover(config, dataset, e);
    }
    // --parsable: "ID" or "ID;CLUSTER"
    const std::string id = trim(split(trim(answer), ';').front());
    if (!is_job_id(id))
        throw Error("cannot submit a mover job for " + quoted(dataset.name) + ": sbatch answered " +
                    quoted(first_line(answer)));
    return one_mover_left(dataset, id);
}

std::size_t end_waiting_jobs(const std::string& mover_id, const std::string& dataset, const std::string& reason)
{
    const std::vector<std::string> waiting =
        parse_waiting_jobs(ask({"squeue", "--me", "--noheader", "--states=PENDING", "--format=%A|%E"},
                               "ask squeue for waiting jobs"),
                           mover_id);
    const std::string comment = kMoverFailedComment + mover_id + " for " + dataset + " failed: " + reason;
    for (const std::string& job : waiting) {
        // The comment first: once cancelled, the job's comment is the
        // reason `dlstage status` shows.  A job that ended meanwhile
        // refuses both; the others are still ended.
        try {
            ask({"scontrol", "update", "JobId=" + job, "Comment=" + comment.substr(0, 400)}, "comment job " + job);
        } catch (const Error&) {
        }
        try {
            ask({"scancel", job}, "cancel job " + job);
        } catch (const Error&) {
        }
    }
    return waiting.size();
}

std::optional<JobNow> job_now_in(std::string_view scontrol)
{
    JobNow job;
    bool restarts = false;
    for (const std::string& field : split(trim(std::string(scontrol)), ' ')) {
        if (starts_with(field, "JobState="))
            job.state = field.substr(9);
        else if (starts_with(field, "Restarts=")) {
            try {
                job.restarts = static_cast<int>(parse_count(field.substr(9), 0, 1000000));
                restarts = true;
            } catch (const Error&) {
                return std::nullopt;
            }
        }
    }
    if (job.state.empty() || !restarts)
        return std::nullopt;
    return job;
}

std::optional<JobNow> job_now(const std::string& job_id)
{
    try {
        return job_now_in(ask({"scontrol", "show", "job", "-o", job_id}, "ask scontrol for job " + job_id));
    } catch (const Error&) {
        return std::nullopt;
    }
}

void mark_ending(const std::string& mover_id, const std::string& reason)
{
    ask({"scontrol", "update", "JobId=" + mover_id, "Comment=" + (kMoverEndingComment + reason).substr(0, 400)},
        "mark mover job " + mover_id + " as ending");
}

void requeue_job(const std::string& job_id)
{
    ask({"scontrol", "requeue", job_id}, "requeue job " + job_id);
}

void cancel_job(const std::string& job_id)
{
    ask({"scancel", job_id}, "cancel job " + job_id);
}

bool cancel_unless_awaited(const std::string& mover_id)
{
    // squeue's default states: the caller's jobs still queued or running.
    const std::string live = ask({"squeue", "--me", "--noheader", "--format=%A|%E"}, "ask squeue for your jobs");
    bool queued = false;
    for (const std::string& line : split(live, '\n'))
        queued = queued || trim(split(line, '|').front()) == mover_id;
    if (!queued || !parse_waiting_jobs(live, mover_id).empty())
        return false;
    cancel_job(mover_id);
    return true;
}

std::optional<std::map<std::string, JobState>> ask_job_states(const std::vector<std::string>& ids, std::string& problem)
{
    const std::vector<std::string> env = submit_environment(environ);
    return dlstage::ask_job_states(ids, kSlurmTimeout, problem, &env);
}

}  // namespace dlstage::mover
