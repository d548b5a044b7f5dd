// dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]: removes, on this
// node, what ended jobs left (job directories an epilog did not finish, a
// shared tier's unfinished claims, old records), as root, from a systemd
// timer or cron.  Slurm is asked which jobs exist and which have processes
// on this node, at the start and again when a node cache's turn comes;
// without its answer nothing is removed.  This
// file parses and prints; the work is gc/gc_run's.
#include <iostream>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config_paths.hpp"
#include "gc/gc_run.hpp"
#include "job/identity.hpp"
#include "job/slurm_jobs.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/strings.hpp"

namespace dlstage::cli {

namespace {
// How long squeue may take before gc gives up (and removes nothing).
constexpr int kSlurmTimeout = 30;
// gc could not tell which jobs exist: nothing was removed.
constexpr int kExitNoSlurm = 3;

void print_help()
{
    std::cout << "Usage: dlstage gc [--dry-run] [--node NAME] [--tier NAME] [-v]\n"
                 "Remove, on this node, what ended jobs left behind: job directories of tiers\n"
                 "with cleanup = \"job-end\" (an epilog that did not finish, a rebooted node),\n"
                 "unfinished removals (JOB.removing-NODE) in shared tiers, and job records in\n"
                 "state_dir older than site.gc_records_days.  A job Slurm still lists, or one\n"
                 "with processes on this node, keeps everything; if Slurm cannot be asked,\n"
                 "nothing is removed.  Root only.\n"
                 "\n"
                 "  --dry-run    say what would be removed and why; remove nothing\n"
                 "  --node NAME  this node's name in Slurm (%n, claims; default: the host name)\n"
                 "  --tier NAME  only this tier (records are then left alone)\n"
                 "  -v           also say what is kept and why\n"
                 "\n"
                 "Exit status: 0 done, 1 something could not be removed or was skipped,\n"
                 "2 usage error, 3 Slurm could not be asked (nothing removed).\n";
}

}  // namespace

int cmd_gc(const GlobalOptions& global, const std::vector<std::string>& args)
{
    GcRequest options;
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false},
                                   {"dry-run", 0, false},
                                   {"verbose", 'v', false},
                                   {"node", 0, true},
                                   {"tier", 0, true}});
    } catch (const UsageError& e) {
        return usage_error("gc: " + std::string(e.what()), "gc");
    }
    if (parsed.has("help")) {
        print_help();
        return kExitOk;
    }
    if (!parsed.operands.empty())
        return usage_error("gc: unexpected argument " + quoted(parsed.operands.front()), "gc");
    options.dry_run = parsed.has("dry-run");
    options.verbose = parsed.has("verbose");
    options.node = parsed.last("node").value_or("");
    options.tier = parsed.last("tier").value_or("");
    if ((parsed.has("node") && options.node.empty()) || (parsed.has("tier") && options.tier.empty()))
        return usage_error("gc: --node and --tier need a NAME", "gc");
    if (::geteuid() != 0) {
        say("gc: must run as root: it removes other users' job directories (run it from dlstage-gc.timer, "
            "cron or sudo)");
        return kExitFailure;
    }
    const Config config = load_trusted_config(choose_config_path(global.config_path, true));
    if (!options.tier.empty() && !config.find_tier(options.tier))
        return usage_error("gc: no tier " + quoted(options.tier) + " in " + config.file +
                               " (tiers: " + join(config.tier_names(), ", ") + ")",
                           "gc");
    if (const Tier* only = config.find_tier(options.tier); only && only->keeps_copies())
        std::cout << "tier " << quoted(options.tier) << " has cleanup = \"" << to_string(only->cleanup)
                  << "\": its data outlives jobs, nothing there is gc's\n";
    if (options.node.empty())
        options.node = this_node_name();

    const auto ask_slurm_now = [] { return ask_slurm(kSlurmTimeout, true); };
    const SlurmJobs jobs = ask_slurm_now();
    if (!jobs.asked) {
        say("gc: cannot tell which jobs still run: " + jobs.problem + "; nothing removed");
        return kExitNoSlurm;
    }
    GcOutcome total;
    const auto report = [&total](const GcOutcome& outcome) {
        for (const auto& line : outcome.out)
            std::cout << printable(line.value_or(std::string())) << "\n";
        std::cout.flush();
        for (const auto& line : outcome.err)
            say("gc: " + line.value_or(std::string()));
        total.removed += outcome.removed;
        total.kept += outcome.kept;
        total.problems += outcome.problems;
    };
    run_gc(config, jobs, ask_slurm_now, options, report);
    std::cout << "gc on " << options.node << (options.dry_run ? " (dry run): would remove " : ": removed ")
              << total.removed << ", kept " << total.kept << ", " << total.problems
              << (total.problems == 1 ? " problem" : " problems") << (options.dry_run ? "; nothing removed" : "")
              << "\n";
    return total.problems ? kExitFailure : kExitOk;
}

}  // namespace dlstage::cli
