// dlstage-stager: one MPI rank per node of a job, run as the job's user by
// `dlstage stage` through the site's launcher (srun, one task per node).
// For each dataset of SPEC it enters this node's job directory (checked as
// the prolog left it), reads its share of the source once, exchanges the
// chunks with the other ranks and writes, extracts or keeps the image on
// every node; the ready marker goes last (mode = "mount": the staged
// marker, and the mount holder step writes the ready marker).
//
// Any failure on any rank prints one line naming dataset, tier, node and
// reason, writes it to the job's failure record (srun may stop the step
// before it forwards the line) and exits at once; the launcher (srun
// --kill-on-bad-exit) then stops every other rank: nothing hangs, and no
// marker is written for data that is not complete everywhere.  Not
// MPI_Abort there: its banner, printed by every rank, would bury the one
// line the user needs.  A usage error is the exception: every rank makes
// the same one, so MPI_Abort stops them alike.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mpi.h>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>

#include "config/config.hpp"
#include "config/stage_spec.hpp"
#include "config/stager_tuning.hpp"
#include "job/identity.hpp"
#include "job/job_identity.hpp"
#include "job/state_record.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/number.hpp"
#include "mover/two_hop.hpp"
#include "stager/stage_dataset.hpp"
#include "stager/steps/collectives.hpp"
#include "stager/steps/watchdog.hpp"

namespace {
using namespace dlstage;

struct Arguments {
    std::string config;
    std::string job_id;
    std::string spec;
    StagerTuning tuning;
};

[[noreturn]] void usage_error(const std::string& message)
{
    std::fprintf(stderr,
                 "dlstage-stager: %s\n"
                 "usage: dlstage-stager --config FILE --job ID [--chunk-size SIZE] [--window N]\n"
                 "                      [--readers N] [--writers N] [--opens N] [--exchange ring|bcast]\n"
                 "                      [--rate-limit SIZE]\n"
                 "                      [--progress SECONDS] SPEC\n"
                 "Run by 'dlstage stage' through srun, one rank per node; see dlstage(1).\n",
                 message.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::exit(2);
}

Arguments parse_arguments(int argc, char** argv)
{
    Arguments args;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usage_error(arg + " needs a value");
            return argv[++i];
        };
        try {
            if (arg == "--config")
                args.config = value();
            else if (arg == "--job")
                args.job_id = naming(arg, [&] { return slurm_number(value()); });
            else if (const TuningKnob* knob = find_tuning_knob(arg))
                naming(arg, [&] { knob->set(value(), args.tuning); });
            else if (!arg.empty() && arg[0] == '-')
                usage_error("unknown option " + arg);
            else if (args.spec.empty())
                args.spec = arg;
            else
                usage_error("only one SPEC (comma-separated) may be given");
        } catch (const Error& e) {
            usage_error(e.what());
        }
    }
    if (args.config.empty() || args.job_id.empty() || args.spec.empty())
        usage_error("--config, --job and SPEC are required");
    return args;
}

[[noreturn]] void abort_all(const stager::NodeContext& ctx, const std::string& what, const std::string& reason)
{
    const std::string line = what + kFailedOn + ctx.node + ": " + reason;
    say(line);
    // srun may stop the step before it has forwarded this rank's last line;
    // the record lets `dlstage stage` tell the reason all the same.
    if (!ctx.state_dir.empty() && !ctx.values.job_id.empty())
        write_failure_record(ctx.state_dir, ctx.values.job_id, ctx.node, line);  // else the line above is all
    usleep(300000);  // give the launcher's output forwarding a moment
    _exit(1);
}

// The configuration, read before MPI is up: MPI_Init's fence waits for
// every rank before the watchdog can, bounded by the site's stall bound.
// Nothing when it cannot be read; its error is said once MPI is up.
std::optional<Config> config_before_mpi(int argc, char** argv)
{
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::string(argv[i]) != "--config")
            continue;
        try {
            return load_config(argv[i + 1]);
        } catch (const std::exception&) {
            break;
        }
    }
    return std::nullopt;
}
}  // namespace

int main(int argc, char** argv)
{
    stager::NodeContext ctx;
    ctx.node = this_node_name();
    // What is being staged, for the failure line: the watchdog's thread
    // may say it too.
    std::mutex what_mutex;
    std::string what = "staging";
    const auto doing = [&](const std::string& now) {
        const std::lock_guard<std::mutex> lock(what_mutex);
        what = now;
    };
    const auto what_now = [&] {
        const std::lock_guard<std::mutex> lock(what_mutex);
        return what;
    };
    const auto stalled = [&](const std::string& line) { abort_all(ctx, what_now(), line); };
    const std::optional<Config> early_config = config_before_mpi(argc, argv);
    const double stall_bound = early_config ? early_config->site.stall_timeout : SiteSettings{}.stall_timeout;
    // Until the watchdog runs, the start's waits for every rank are bounded
    // alike.  Its line names only this node: the rest of ctx is filled in
    // meanwhile, which its thread must not read.
    const stager::NodeContext starting = ctx;
    auto start_wait = std::make_unique<stager::UnwatchedWait>("the stagers' start (MPI_Init)", stall_bound,
                                                              [&starting](const std::string& line) {
                                                                  abort_all(starting, "staging", line);
                                                              });

    // The main thread and the watchdog's call MPI; reader and writer
    // threads do file I/O.
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    const Arguments args = parse_arguments(argc, argv);
    ctx.progress_interval = args.tuning.progress_interval;

    std::unique_ptr<stager::Watchdog> watchdog;
    try {
        ctx.values.job_id = args.job_id;
        // overrides: the same tiers as stage
        const Config config = config_for_this_job(early_config ? *early_config : load_config(args.config));
        ctx.state_dir = config.site.state_dir;
        ctx.manifest_dir = config.site.manifests();
        ctx.values = {args.job_id, this_user_name(), ctx.node};
        watchdog = std::make_unique<stager::Watchdog>(stager::texts_over_ranks(MPI_COMM_WORLD, ctx.node), stall_bound,
                                                      stalled);
        start_wait.reset();
        if (!watchdog->running() && config.site.stall_timeout > 0 && ctx.size > 1 && ctx.rank == 0)
            say("the stall watchdog is off: this MPI library gives no MPI_THREAD_MULTIPLE; a node that stops "
                "answering holds the staging until the job's time limit");
        // A reach = "mover" dataset is staged from its mover job's copy here
        // (mover/two_hop), unless this job runs on the mover partition.
        const auto partition = identity_from_slurm(process_env, ctx.values.user, false).partition;
        for (const StageItem& item :
             mover::as_staged_here(config, resolve_stage_data(config, args.spec), partition, ctx.values.user)) {
            doing("staging " + item.dataset.name + " to " + item.tier.name);
            stager::stage_dataset(item, ctx, args.tuning);
        }
        watchdog->stop();
    } catch (const std::exception& e) {
        abort_all(ctx, what_now(), e.what());
    }
    // Every rank passed the watchdog's last barrier (every dataset is
    // staged); MPI_Finalize's fence waits for them all once more, unwatched.
    doing("staging");
    const stager::UnwatchedWait end_wait("the stagers' end (MPI_Finalize)", stall_bound, stalled);
    watchdog.reset();
    MPI_Finalize();
    return 0;
}
