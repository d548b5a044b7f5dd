#include "launch/job_end.hpp"

#include <csignal>
#include <signal.h>

#include "lib/strings.hpp"

namespace dlstage::launch {

namespace {
volatile std::sig_atomic_t g_ending = 0;
volatile std::sig_atomic_t g_launcher = 0;

// Async-signal-safe: a flag and kill(2).
extern "C" void on_term(int)
{
    g_ending = 1;
    if (const pid_t launcher = static_cast<pid_t>(g_launcher); launcher > 0)
        ::kill(launcher, SIGTERM);
}
}  // namespace

void note_job_end()
{
    struct sigaction action {};
    action.sa_handler = on_term;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: waits see EINTR and retry, the flag is set
    sigaction(SIGTERM, &action, nullptr);
}

bool job_ending()
{
    return g_ending != 0;
}

void launcher_started(pid_t pid)
{
    g_launcher = static_cast<std::sig_atomic_t>(pid);
}

bool says_time_limit(const std::string& launcher_line)
{
    return starts_with(launcher_line, "slurmstepd") && launcher_line.find("*** STEP ") != std::string::npos &&
           ends_with(launcher_line, " DUE TO TIME LIMIT ***");
}

std::string cut_by_time_limit(const std::vector<StageItem>& items)
{
    std::vector<std::string> kept;
    for (const StageItem& item : items)
        if (item.tier.shared())
            kept.push_back(item.dataset.name + " in " + item.tier.name);
    std::string line = "staging was cut off by this job's time limit: ask for more time (--time)";
    if (!kept.empty())
        line += "; what it copied of " + join(kept, ", ") + " is kept, and the next staging goes on from it";
    return line;
}

}  // namespace dlstage::launch
