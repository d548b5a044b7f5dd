#include "cli/mounts.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/launch.hpp"
#include "lib/config_paths.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/identity.hpp"
#include "lib/job_layout.hpp"
#include "lib/number.hpp"
#include "lib/stage_spec.hpp"
#include "lib/state_record.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"
#include "lib/sys/sys_error.hpp"

namespace dlstage::cli {

namespace {
using Clock = std::chrono::steady_clock;

// How long a squashfuse may take to mount, and the holder step to report
// from every node (its start includes Slurm's step launch).
constexpr auto kMountTimeout = std::chrono::seconds(30);
constexpr auto kHolderTimeout = std::chrono::seconds(120);

// An unlinked temporary file: a child's output we read back later, which
// (unlike a pipe) never stops the child once we stop reading.
class ScratchFile {
public:
    ScratchFile()
    {
        const char* dir = std::getenv("TMPDIR");
        std::string path = std::string(dir && *dir ? dir : "/tmp") + "/dlstage-XXXXXX";
        fd_ = mkostemp(path.data(), O_CLOEXEC | O_APPEND);
        if (fd_ < 0)
            throw_cannot("create a temporary file in", path.substr(0, path.rfind('/')), errno);
        unlink(path.c_str());
    }
    ~ScratchFile() { ::close(fd_); }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;

    int fd() const { return fd_; }
    std::string text() const
    {
        std::string all;
        char buf[4096];
        ssize_t n;
        for (off_t at = 0; (n = pread(fd_, buf, sizeof buf, at)) > 0; at += n)
            all.append(buf, static_cast<std::size_t>(n));
        return all;
    }

private:
    int fd_ = -1;
};

std::vector<StageItem> mount_items(const Config& config, const std::string& spec)
{
    std::vector<StageItem> mounts;
    for (StageItem& item : resolve_stage_data(config, spec))
        if (item.dataset.mode == Mode::Mount)
            mounts.push_back(std::move(item));
    return mounts;
}

// ---------------------------------------------------------------------------
// The holder, on one node.

bool on_path(const std::string& program)
{
    const char* path = std::getenv("PATH");
    for (const std::string& dir : split(path ? path : "/usr/bin:/bin", ':'))
        if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0)
            return true;
    return false;
}

// squashfuse_ll (the low-level, faster server) where installed.
std::string squashfuse_program(const std::string& node)
{
    for (const char* program : {"squashfuse_ll", "squashfuse"})
        if (on_path(program))
            return program;
    throw Error("squashfuse is not installed on " + node +
                " (package squashfuse); ask the admins, or stage the image with mode = \"extract\"");
}

// Something live is mounted on the mount point (a FUSE mount whose server
// died fails stat with ENOTCONN: not live).
bool mounted(const DatasetLayout& layout)
{
    struct stat point {}, tier {};
    return stat(layout.dataset_dir.c_str(), &point) == 0 && stat(layout.tier_dir.c_str(), &tier) == 0 &&
           point.st_dev != tier.st_dev;
}

struct HeldMount {
    StageItem item;
    DatasetLayout layout;
    pid_t server = -1;  // squashfuse in the foreground; -1: none (any more)
};

std::string first_line(const std::string& text)
{
    const std::string trimmed = trim(text);
    return trimmed.substr(0, trimmed.find('\n'));
}

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
        int status = 0;
        if (waitpid(held.server, &status, WNOHANG) == held.server) {
            held.server = -1;
            const std::string why = first_line(messages.text());
            throw Error(program + " cannot mount the image " + staged->source + ": " +
                        (why.empty() ? describe_exit(status) : why) + " (rebuild it with 'dlstage pack')");
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
    kill(held.server, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(held.server, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
            kill(held.server, SIGKILL);
            waitpid(held.server, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
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
            return kExitOk;
        }
        for (HeldMount& mount : held) {
            int status = 0;
            if (mount.server < 0 || waitpid(mount.server, &status, WNOHANG) != mount.server)
                continue;
            mount.server = -1;
            unlink(mount.layout.ready_marker.c_str());
            const std::string why = "the squashfuse serving " + mount.item.dataset.name + " on " + node + " ended (" +
                                    describe_exit(status) + "); " + mount.item.env_name + " no longer works there";
            print_error(why);
            // Nobody reads this step's output any more: `dlstage status` shows the record.
            try {
                write_record(failure_record_path(state_dir, job_id, node), toml::table{{"node", node}, {"message", why}});
            } catch (const Error&) {
            }
        }
        // exit 0: a failing task would make srun stop the other nodes' mounts too
        if (std::none_of(held.begin(), held.end(), [](const HeldMount& m) { return m.server >= 0; }))
            return kExitOk;
    }
}

// ---------------------------------------------------------------------------
// Starting the holder step from `dlstage stage`.

std::vector<std::string> holder_command(const Config& config, const std::string& config_path,
                                        const std::string& job_id, const std::string& nodes, const std::string& spec)
{
    std::vector<std::string> argv;
    // A node that fails must not get the others SIGKILLed (which leaves dead
    // mounts and their ready markers): start_mount_holder stops the step
    // with SIGTERM instead, and every holder cleans up.
    for (const std::string& word : job_step_command(config, job_id, nodes, kMountStep, OnTaskFailure::KeepOthers))
        if (!starts_with(word, "--mpi="))  // not an MPI program
            argv.push_back(word);
    // Shares the job's CPUs and memory with every later step, for the whole job.
    argv.insert(argv.end(), {"--mpi=none", "--overlap", "--input=none", sibling_program("dlstage"), "--config",
                             config_path, kHoldMountsCommand, "--job", job_id, spec});
    return argv;
}

// srun passes SIGTERM on to the tasks and waits for them: each holder
// releases its mounts.
void stop_step(pid_t srun, int& status)
{
    kill(srun, SIGTERM);
    waitpid(srun, &status, 0);
}

std::string format_seconds(Clock::duration elapsed)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", std::chrono::duration<double>(elapsed).count());
    return text;
}

std::size_t count_mounted_lines(const std::string& out)
{
    std::size_t count = 0;
    for (const std::string& line : split(out, '\n'))
        if (starts_with(line, kMountedLine))
            ++count;
    return count;
}
}  // namespace

int start_mount_holder(const Config& config, const std::string& config_path, const std::string& job_id,
                       const std::string& nodes, const std::string& spec)
{
    const auto mounts = mount_items(config, spec);
    if (mounts.empty())
        return kExitOk;
    std::vector<std::string> names;
    for (const StageItem& item : mounts)
        names.push_back(item.dataset.name);
    const std::string what = join(names, ", ");

    ScratchFile out, err;
    const Fd null = open_dev_null(O_RDONLY);
    setenv(kStagerStepVar, "1", 1);  // the plugin leaves dlstage's own steps alone
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
            std::cerr << kMessagePrefix << "mounted " << what << " on " << want << (want == 1 ? " node" : " nodes")
                      << " in " << format_seconds(Clock::now() - started) << " s (squashfuse, held until the job ends)\n";
            return kExitOk;  // the step runs on, holding the mounts until job end
        }
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        if (err.text().find(std::string(kMessagePrefix) + "mounting ") != std::string::npos) {
            stop_step(pid, status);
            break;
        }
        if (Clock::now() > deadline) {
            stop_step(pid, status);
            print_error("mounting " + what + ": the mount step did not report from every node within " +
                        std::to_string(kHolderTimeout.count()) + " s");
            return kExitFailure;
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
    print_error("mounting " + what + " failed" + (explained ? "; see the messages above" : " (" + describe_exit(status) + ")"));
    return kExitFailure;
}

int cmd_hold_mounts(const GlobalOptions& options, const std::vector<std::string>& args)
{
    if (args.size() != 3 || args[0] != "--job")
        return usage_error("hold-mounts --job ID SPEC is started by 'dlstage stage'; it is not for direct use",
                           "hold-mounts");
    const std::string node = this_node_name();
    const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
    const TemplateValues values{args[1], this_user_name(), node};

    // Blocked from the start, so a job end during mounting is seen.
    sigset_t signals;
    sigemptyset(&signals);
    for (const int signal : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&signals, signal);
    sigprocmask(SIG_BLOCK, &signals, nullptr);

    std::vector<HeldMount> held;
    std::string current;
    try {
        const auto mounts = mount_items(config, args[2]);
        const std::string program = mounts.empty() ? "" : squashfuse_program(node);
        for (const StageItem& item : mounts) {
            current = item.dataset.name;
            held.push_back(HeldMount{item, dataset_layout(item, values), -1});
            mount_image(held.back(), program, node);
        }
    } catch (const Error& e) {
        release_all(held);
        print_error("mounting " + current + " failed on " + node + ": " + e.what());
        return kExitFailure;
    }
    std::cout << kMountedLine << node << std::endl;
    held.erase(std::remove_if(held.begin(), held.end(), [](const HeldMount& m) { return m.server < 0; }), held.end());
    if (held.empty())
        return kExitOk;  // nothing new to hold: earlier holders keep theirs
    return hold(held, signals, node, config.site.state_dir, args[1]);
}

}  // namespace dlstage::cli
