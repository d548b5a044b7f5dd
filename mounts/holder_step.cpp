#include "mounts/holder_step.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "launch/job_step.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "mounts/mount_holder.hpp"
#include "mounts/scratch_file.hpp"

namespace dlstage::mounts {

namespace {
using Clock = std::chrono::steady_clock;

// How long the holder step may take to report from every node (its start
// includes Slurm's step launch).
constexpr auto kHolderTimeout = std::chrono::seconds(120);
// How long srun may take to stop the step (each holder unmounts, squashfuse
// within 5 s) before it is killed.
constexpr auto kStopGrace = std::chrono::seconds(60);

// srun passes SIGTERM on to the tasks and waits for them: each holder
// releases its mounts.
void stop_step(pid_t srun, int& status)
{
    status = stop(srun, SIGTERM, kStopGrace);
}

std::string format_seconds(Clock::duration elapsed)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", std::chrono::duration<double>(elapsed).count());
    return text;
}

}  // namespace

std::vector<std::string> holder_command(const Config& config, const std::string& config_path, const std::string& job_id,
                                        const std::string& nodes, const std::string& spec)
{
    // A node that fails must not get the others SIGKILLed (which leaves dead
    // mounts and their ready markers): start_mount_holder stops the step
    // with SIGTERM instead, and every holder cleans up.
    std::vector<std::string> argv = launch::job_step_command(config, job_id, nodes, kMountStep,
                                                             launch::OnTaskFailure::KeepOthers,
                                                             launch::StepProgram::NotMpi);
    // Shares the job's CPUs and memory with every later step, for the whole job.
    argv.insert(argv.end(), {"--overlap", "--input=none", launch::sibling_program("dlstage"), "--config", config_path,
                             kHoldMountsCommand, "--job", job_id, spec});
    return argv;
}

std::size_t count_mounted_lines(const std::string& out)
{
    std::size_t count = 0;
    for (const std::string& line : split(out, '\n'))
        if (starts_with(line, kMountedLine))
            ++count;
    return count;
}

bool start_mount_holder(const Config& config, const std::string& config_path, const std::string& job_id,
                        const std::string& nodes, const std::string& spec)
{
    const auto mounts = mount_items(config, spec);
    if (mounts.empty())
        return true;
    std::vector<std::string> names;
    for (const StageItem& item : mounts)
        names.push_back(item.dataset.name);
    const std::string what = join(names, ", ");

    ScratchFile out, err;
    const Fd null = open_dev_null(O_RDONLY);
    launch::set_step_environment();
    // Its own session: it outlives this command and must not get a
    // terminal's signals in salloc.
    const pid_t pid =
        spawn(holder_command(config, config_path, job_id, nodes, spec), SpawnIo{null.get(), out.fd(), err.fd(), true});
    const std::uint64_t want = parse_count(nodes, 1, kMaxSlurmNumber);  // checked by dlstage stage
    const auto started = Clock::now();
    const auto deadline = started + kHolderTimeout;
    int status = 0;
    for (;;) {
        if (count_mounted_lines(out.text()) >= want) {
            say("mounted " + what + " on " + std::to_string(want) + (want == 1 ? " node" : " nodes") + " in " +
                format_seconds(Clock::now() - started) + " s (squashfuse, held until the job ends)");
            return true;  // the step runs on, holding the mounts until job end
        }
        if (const auto ended = try_wait(pid)) {
            status = *ended;
            break;
        }
        if (err.text().find(std::string(kMessagePrefix) + kMountingWord) != std::string::npos) {
            stop_step(pid, status);
            break;
        }
        if (Clock::now() > deadline) {
            stop_step(pid, status);
            say("mounting " + what + ": the mount step did not report from every node within " +
                std::to_string(kHolderTimeout.count()) + " s");
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    bool explained = false;
    for (const std::string& line : split(err.text(), '\n')) {
        if (trim(line).empty())
            continue;
        std::cerr << line << "\n";
        explained = explained || starts_with(line, kMessagePrefix);
    }
    say("mounting " + what + " failed" + (explained ? "; see the messages above" : " (" + describe_exit(status) + ")"));
    return false;
}

}  // namespace dlstage::mounts
