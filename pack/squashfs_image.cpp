#include "pack/squashfs_image.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/parallel.hpp"
#include "lib/sys/periodic.hpp"
#include "lib/sys/process.hpp"
#include "pack/output_files.hpp"

namespace dlstage::pack {

namespace {
// The non-empty lines a child writes to fd, until it closes it.
// mksquashfs's stderr: bounded memory, whatever the child says.
struct StderrLines {
    static constexpr std::size_t kKept = 1000;
    std::vector<std::string> lines;
    void operator()(const std::string& raw)
    {
        if (const std::string line = trim(raw); !line.empty()) {
            if (lines.size() == kKept)
                lines.erase(lines.begin() + kKept / 2);  // keep the first and the latest
            lines.push_back(line);
        }
    }
};

struct ChildResult {
    std::string failure;              // "" when it exited with status 0
    std::vector<std::string> stderr;  // its messages, non-empty lines
};

// Runs argv with stdout discarded (mksquashfs prints a long summary there)
// and its stderr collected.
ChildResult run_collecting_stderr(const std::vector<std::string>& argv)
{
    StderrLines collected;
    StderrRunOptions options;
    options.discard_stdout = true;
    options.started = [](pid_t pid) { set_child_to_stop(pid); };
    int status = 0;
    try {
        status = run_reading_stderr(argv, std::ref(collected), options);
    } catch (const Error& e) {  // it could not be started
        set_child_to_stop(0);
        return ChildResult{e.what(), {}};
    }
    ChildResult result;
    result.stderr = std::move(collected.lines);
    set_child_to_stop(0);
    if (exited_ok(status))
        return result;
    result.failure = describe_failure(argv[0], status, result.stderr.empty() ? "" : result.stderr.back());
    return result;
}

// mksquashfs goes on after some problems and still exits 0: a file it
// cannot read becomes an empty file ("..., creating empty file"), an entry
// it cannot stat is left out ("..., ignoring").  Such an image is not the
// tree, so those lines fail the pack; other lines are passed on.
std::string data_loss_in(const std::vector<std::string>& lines)
{
    for (const std::string& line : lines) {
        std::string lower = line;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        for (const char* sign :
             {"creating empty", "ignoring", "skipping", "cannot stat", "could not open", "failed to read"})
            if (lower.find(sign) != std::string::npos)
                return line;
    }
    return "";
}

std::vector<std::string> mksquashfs_command(const std::string& dir, const std::string& image, std::uint64_t block_size,
                                            const PackTree& tree)
{
    std::vector<std::string> argv = {"mksquashfs",
                                     dir,
                                     image,
                                     "-noappend",
                                     "-no-progress",
                                     "-b",
                                     std::to_string(block_size),
                                     "-no-xattrs",
                                     "-processors",
                                     std::to_string(usable_cpus())};
    // The image's creation time would be now: use the newest mtime in the
    // tree, so that the same tree gives the same image.  mksquashfs refuses
    // the option when SOURCE_DATE_EPOCH is set; then that time is used.
    if (!std::getenv("SOURCE_DATE_EPOCH"))
        argv.insert(argv.end(), {"-mkfs-time", std::to_string(tree.newest_mtime)});
    return argv;
}

}  // namespace

SquashfsImage make_squashfs_image(const std::string& dir, const std::string& out, std::uint64_t block_size,
                                  const PackTree& tree, const std::function<void(std::uint64_t)>& image_progress)
{
    const Temporaries temporary({temporary_name(out)});
    ChildResult run;
    {
        std::function<void()> report_size;
        if (image_progress)
            report_size = [&] {
                struct stat st {};
                if (::stat(temporary[0].c_str(), &st) == 0)
                    image_progress(static_cast<std::uint64_t>(st.st_size));
            };
        const Periodic watcher(std::chrono::seconds(1), std::move(report_size));
        run = run_collecting_stderr(mksquashfs_command(dir, temporary[0], block_size, tree));
    }
    if (!run.failure.empty())
        throw Error("cannot create " + quoted(out) + ": " + run.failure);
    if (const std::string loss = data_loss_in(run.stderr); !loss.empty())
        throw Error("cannot create " + quoted(out) + ": mksquashfs: " + loss);
    SquashfsImage image;
    image.messages = run.stderr;
    image.bytes = file_size(temporary[0]);
    rename_into_place(temporary[0], out);
    return image;
}

}  // namespace dlstage::pack
