#include "mounts/mount_holder.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/identity.hpp"
#include "job/job_layout.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "mounts/scratch_file.hpp"

namespace dlstage::mounts {

std::vector<StageItem> mount_items(const Config& config, const std::string& spec)
{
    std::vector<StageItem> mounts;
    for (StageItem& item : resolve_stage_data(config, spec))
        if (item.dataset.mode == Mode::Mount)
            mounts.push_back(std::move(item));
    return mounts;
}

namespace {
using Clock = std::chrono::steady_clock;

// How long a squashfuse may take to mount.
constexpr auto kMountTimeout = std::chrono::seconds(30);

// squashfuse_ll (the low-level, faster server) where installed.
std::string squashfuse_program(const std::string& node)
{
    for (const char* program : {"squashfuse_ll", "squashfuse"})
        if (!find_on_path(program).empty())
            return program;
    throw Error("squashfuse is not installed on " + node +
                " (package squashfuse); ask the admins, or stage the image with mode = \"extract\"");
}

// Something live is mounted on the mount point (a FUSE mount whose server
// died fails stat with ENOTCONN: not live).
bool mounted(const DatasetLayout& layout)
{
    struct stat point {
    }, tier{};
    return stat(layout.dataset_dir.c_str(), &point) == 0 && stat(layout.tier_dir.c_str(), &tier) == 0 &&
           point.st_dev != tier.st_dev;
}

struct HeldMount {
    StageItem item;
    DatasetLayout layout;
    pid_t server = -1;  // squashfuse in the foreground; -1: none (any more)
};

// Starts squashfuse on the staged image and waits until the mount is up;
// then writes the ready marker (path: the mount point).
void mount_image(HeldMount& held, const std::string& program, const std::string& node)
{
    const DatasetLayout& layout = held.layout;
    const auto staged = read_ready_marker(layout.staged_marker);
    if (!staged)
        throw Error("the image of " + held.item.dataset.name + " is not staged on " + node);
    if (mounted(layout) && read_ready_marker(layout.ready_marker))
        return;  // a holder started earlier in this job keeps it (dlstage stage run twice)
    struct stat point {};
    if (lstat(layout.dataset_dir.c_str(), &point) != 0 || !S_ISDIR(point.st_mode) || point.st_uid != getuid())
        throw Error("the mount point " + layout.dataset_dir + " is not a directory of yours on " + node);

    ScratchFile messages;
    const Fd null = open_dev_null(O_RDWR);
    held.server =
        spawn({program, "-f", staged->path, layout.dataset_dir}, SpawnIo{null.get(), null.get(), messages.fd(), false});
    const auto deadline = Clock::now() + kMountTimeout;
    while (!mounted(layout)) {
        if (const auto status = try_wait(held.server)) {
            held.server = -1;
            std::string why = first_line(messages.text());
            if (!why.empty() && why.back() == '.')
                why.pop_back();  // squashfuse ends its sentence; ours goes on with the advice
            throw Error(program + " cannot mount the image " + staged->source + ": " +
                        (why.empty() ? describe_exit(*status) : why) + " (rebuild it with 'dlstage pack')");
        }
        if (Clock::now() > deadline)
            throw Error(program + " did not mount the image " + staged->source + " within " +
                        std::to_string(kMountTimeout.count()) + " s");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ReadyMarker ready = *staged;
    ready.path = layout.dataset_dir;
    write_ready_marker(layout.ready_marker, ready);
}

// Unmounts: the ready marker goes first, so no new step is pointed at a
// mount on its way out.  squashfuse unmounts itself on SIGTERM.
void release(HeldMount& held)
{
    if (held.server < 0)
        return;
    unlink(held.layout.ready_marker.c_str());
    stop(held.server, SIGTERM, std::chrono::seconds(5));
    held.server = -1;
    if (mounted(held.layout) || access(held.layout.dataset_dir.c_str(), F_OK) != 0)
        try {
            run_reading_stderr({"fusermount3", "-u", "-z", held.layout.dataset_dir}, [](const std::string&) {});
        } catch (const Error&) {  // no fusermount3: the epilog detaches it
        }
}

void release_all(std::vector<HeldMount>& held)
{
    for (HeldMount& mount : held)
        release(mount);
}

// Until SIGTERM/SIGINT/SIGHUP (all blocked by the caller and in `signals`),
// or until every server has ended.  A server that dies on its own takes its
// ready marker with it, so later steps do not export a dead mount.
int hold(std::vector<HeldMount>& held, const sigset_t& signals, const std::string& node, const std::string& state_dir,
         const std::string& job_id)
{
    for (;;) {
        const timespec second{1, 0};
        const int signal = sigtimedwait(&signals, nullptr, &second);
        if (signal == SIGTERM || signal == SIGINT || signal == SIGHUP) {
            release_all(held);
            return EXIT_SUCCESS;
        }
        for (HeldMount& mount : held) {
            const auto status = mount.server < 0 ? std::nullopt : try_wait(mount.server);
            if (!status)
                continue;
            mount.server = -1;
            unlink(mount.layout.ready_marker.c_str());
            const std::string why = "the squashfuse serving " + mount.item.dataset.name + " on " + node + " ended (" +
                                    describe_exit(*status) + "); " + mount.item.env_name + " no longer works there";
            say(why);
            // Nobody reads this step's output any more: `dlstage status` shows the record.
            write_failure_record(state_dir, job_id, node, why);
        }
        // exit 0: a failing task would make srun stop the other nodes' mounts too
        if (std::none_of(held.begin(), held.end(), [](const HeldMount& m) { return m.server >= 0; }))
            return EXIT_SUCCESS;
    }
}
}  // namespace

int hold_mounts(const Config& config, const std::string& job_id, const std::string& spec)
{
    const std::string node = this_node_name();
    const TemplateValues values{job_id, this_user_name(), node};

    // Blocked from the start, so a job end during mounting is seen.
    sigset_t signals;
    sigemptyset(&signals);
    for (const int signal : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&signals, signal);
    sigprocmask(SIG_BLOCK, &signals, nullptr);

    std::vector<HeldMount> held;
    std::string current;
    try {
        const auto mounts = mount_items(config, spec);
        const std::string program = mounts.empty() ? "" : squashfuse_program(node);
        for (const StageItem& item : mounts) {
            current = item.dataset.name;
            held.push_back(HeldMount{item, dataset_layout(item, values), -1});
            mount_image(held.back(), program, node);
        }
    } catch (const Error& e) {
        release_all(held);
        say(kMountingWord + current + kFailedOn + node + ": " + e.what());
        return EXIT_FAILURE;
    }
    std::cout << kMountedLine << node << std::endl;
    held.erase(std::remove_if(held.begin(), held.end(), [](const HeldMount& m) { return m.server < 0; }), held.end());
    if (held.empty())
        return EXIT_SUCCESS;  // nothing new to hold: earlier holders keep theirs
    return hold(held, signals, node, config.site.state_dir, job_id);
}

}  // namespace dlstage::mounts
