// dlstage stage [SPEC...]: stage datasets to every node of the current job.
//
// The plugin runs this before a batch script or srun's tasks start; users
// run it in salloc (or any job script).  It starts dlstage-stager through
// the site's launcher, one rank per node, and waits (launch/); then the
// mount holder for datasets in mode = "mount" (mounts/).  Here: the command
// line and what stage says; the job's environment is read in launch/.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "config/stage_spec.hpp"
#include "job/identity.hpp"
#include "job/job_identity.hpp"
#include "launch/job_end.hpp"
#include "launch/mover_limit.hpp"
#include "launch/mover_outcome.hpp"
#include "launch/stager_step.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "mounts/holder_step.hpp"
#include "policies/admission.hpp"
#include "spank/source_facts_env.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage stage [--quiet] [SPEC[,SPEC...]]...\n"
                 "Stage datasets to every node of the current Slurm job (inside salloc, sbatch or\n"
                 "srun).  SPEC is NAME[:TIER] as for --stage-data; without SPEC, the job's own\n"
                 "--stage-data request.  Runs dlstage-stager through the site's launcher, one\n"
                 "rank per node, and waits; exit 0 once every node holds the verified data.\n"
                 "\n"
                 "Environment: DLSTAGE_CHUNK_SIZE (default 4M), DLSTAGE_WINDOW (chunks in flight\n"
                 "per node, default 16), DLSTAGE_READERS and DLSTAGE_WRITERS (threads per node,\n"
                 "default 4 each), DLSTAGE_OPENS (source files opened at once per node, default\n"
                 "32), DLSTAGE_RATE_LIMIT (read bytes/s per node, default unlimited),\n"
                 "DLSTAGE_PROGRESS (seconds between progress lines, default 5), DLSTAGE_EXCHANGE\n"
                 "(ring, or bcast for the baseline).  A malformed value is refused before anything\n"
                 "is launched.\n";
}

// Where the data went, for a user in salloc; "<node>" stands for %n.
void print_paths(const std::vector<StageItem>& items, const std::string& job_id)
{
    const std::string user = this_user_name();
    for (const StageItem& item : items) {
        const std::string dir = item.tier.path.expand({job_id, user, "<node>"});
        say(item.env_name + " is set in each srun step (data in " + dir + "/" + item.dataset.name + " on every node)");
    }
}
}  // namespace

int cmd_stage(const GlobalOptions& options, const std::vector<std::string>& args)
{
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false}, {"quiet", 'q', false}});
    } catch (const UsageError& e) {
        return usage_error("stage: " + std::string(e.what()), "stage");
    }
    if (parsed.has("help")) {
        print_help();
        return kExitOk;
    }
    const bool quiet = parsed.has("quiet");
    const std::vector<std::string>& specs = parsed.operands;
    if (!launch::inside_job()) {
        say(std::string("stage runs inside a Slurm job (salloc, sbatch, srun): ") + kJobIdVar + " and " + kJobNodesVar +
            " are not set");
        return kExitFailure;
    }
    launch::StagerStep step = launch::stager_step_from_environment(specs);
    if (step.spec.empty())
        return usage_error("stage: no SPEC given and the job has no --stage-data request", "stage");

    step.config_path = choose_config_path(options.config_path, true);
    const Config config = config_for_this_job(load_config_for_caller(step.config_path));
    const auto items = resolve_stage_data(config, step.spec);  // refuse bad input before starting anything
    // Here the job's memory is certain (Slurm's job variables), sizes are
    // the submit side's: checked again before anything is written.
    policy::require(policy::fits_in_memory(config, items,
                                           spank::decode_facts(process_env(std::string(kJobEnvPrefix) + kFactsVar)),
                                           memory_from_slurm(process_env)));
    const std::string& job_id = step.job_id;
    // A mover job that fails or is cancelled ends the jobs that wait for it.
    const bool mover =
        launch::is_mover_job(config, items, identity_from_slurm(process_env, this_user_name(), false).partition);
    launch::note_job_end();  // SIGTERM: the staging's end is said, and for a mover its waiters told
    // A mover job near its time limit requeues itself (its waiters wait).
    const auto limit_watch = mover ? std::make_unique<launch::MoverLimitWatch>(config, job_id) : nullptr;
    const auto say_cut_off = [&items] { say(launch::cut_by_time_limit(items)); };
    if (const launch::LauncherReport report = launch::run_stager_step(config, step, say_cut_off);
        report.exit_code != 0) {
        if (limit_watch && limit_watch->requeued())
            return kExitFailure;  // Slurm ended this run: its line said why
        for (const std::string& line : launch::staging_failure(config, step, report))
            say(line);
        if (mover)
            for (const std::string& line :
                 launch::mover_ended(config, step, report, items, limit_watch && limit_watch->ran_out()))
                say(line);
        return kExitFailure;
    }
    if (!mounts::start_mount_holder(config, step.config_path, job_id, step.nodes, step.spec))
        return kExitFailure;
    if (!quiet)
        print_paths(items, job_id);
    return kExitOk;
}

}  // namespace dlstage::cli
