// dlstage watch-movers --client PID MOVER:NAME[:new]...: the watch a salloc or
// srun keeps on the mover jobs its job waits for (internal, started by the
// plugin beside the client; see mover/mover_watch).  Its lines go to the
// client's terminal.
#include <csignal>
#include <sys/types.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "lib/sys/process.hpp"
#include "mover/mover_watch.hpp"

namespace dlstage::cli {

int cmd_watch_movers(const GlobalOptions&, const std::vector<std::string>& args)
{
    if (args.size() < 3 || args[0] != "--client")
        return usage_error(
            std::string(kWatchMoversCommand) +
                " --client PID MOVER:NAME[:new]... is started by salloc and srun; it is not for direct use",
            kWatchMoversCommand);
    try {
        const auto client = static_cast<pid_t>(parse_count(args[1], 1, 1U << 22));
        std::vector<mover::WatchedMover> movers;
        for (std::size_t i = 2; i < args.size(); ++i)
            movers.push_back(mover::parse_watched(args[i]));
        // Ctrl-C at the client's terminal ends the client; this watch then
        // sees it gone and gives up the mover jobs submitted for its job.
        std::signal(SIGINT, SIG_IGN);
        std::signal(SIGQUIT, SIG_IGN);
        std::signal(SIGHUP, SIG_IGN);
        // Nothing of the client's but the terminal (a pipe or socket it
        // holds must not stay open for it), and no child of it: it never
        // waits for us, and we would stay a zombie of a long salloc.
        close_descriptors(3, ~0U);
        // Only the client's own child may be sure the pid is the client's.
        const ProcessWatch client_watch(::getppid() == client ? client : 0);
        continue_detached();
        mover::watch_movers(movers, client_watch, mover::WatchTiming{}, [](const std::string& line) { say(line); });
        return kExitOk;
    } catch (const Error& e) {
        say(std::string(kWatchMoversCommand) + ": " + e.what());
    }
    return kExitFailure;
}

}  // namespace dlstage::cli
