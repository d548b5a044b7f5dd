// dlstage prefetch NAME: hop 1 of two-hop staging ahead of time, by hand.
// Submits the mover job that copies a reach = "mover" dataset into its
// shared tier (or finds the one already queued or running) and prints its
// job id alone on stdout, for `sbatch --dependency=afterok:ID`; prints
// nothing there when the user's copy is already current.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config.hpp"
#include "config/config_paths.hpp"
#include "job/identity.hpp"
#include "lib/error.hpp"
#include "lib/log.hpp"
#include "lib/strings.hpp"
#include "mover/hop_one.hpp"

namespace dlstage::cli {

namespace {
void print_help()
{
    std::cout << "Usage: dlstage prefetch NAME\n"
                 "Copy NAME, a dataset only the site's mover nodes can read (reach = \"mover\"), into\n"
                 "its shared tier ahead of time: submit your mover job for it (or find the one\n"
                 "already queued or running) and print its job id on stdout, e.g.\n"
                 "  id=$(dlstage prefetch in21k) && sbatch ${id:+--dependency=afterok:$id} job.sh\n"
                 "Prints nothing on stdout when your copy is already current.  Jobs that ask for\n"
                 "NAME with --stage-data wait for the mover job by themselves.\n";
}
}  // namespace

int cmd_prefetch(const GlobalOptions& options, const std::vector<std::string>& args)
{
    ParsedArgs parsed;
    try {
        parsed = parse_args(args, {{"help", 'h', false}});
    } catch (const UsageError& e) {
        return usage_error("prefetch: " + std::string(e.what()), "prefetch");
    }
    if (parsed.has("help")) {
        print_help();
        return kExitOk;
    }
    if (parsed.operands.size() != 1)
        return usage_error("prefetch takes one dataset NAME", "prefetch");
    const std::string& name = parsed.operands.front();
    try {
        const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
        const Dataset* dataset = config.find_dataset(name);
        if (!dataset) {
            say("prefetch: no dataset " + quoted(name) + did_you_mean(name, config.dataset_names()) +
                " in the catalog (see 'dlstage catalog list')");
            return kExitFailure;
        }
        if (dataset->reach != Reach::Mover) {
            say("prefetch: " + quoted(name) +
                " is read on the compute nodes (reach = \"compute\"): its jobs stage it themselves, nothing to "
                "prefetch");
            return kExitFailure;
        }
        const mover::HopOne hop = mover::prepare_copy(config, *dataset, this_user_name());
        if (hop.copy_usable) {
            say(name + ": your copy in " + dataset->via + " is current: no mover job needed");
            return kExitOk;
        }
        say(name + ": " + hop.why + ": mover job " + hop.job.job_id +
            (hop.job.submitted ? " copies it there" : " is already copying it there"));
        std::cout << hop.job.job_id << "\n";
        return kExitOk;
    } catch (const Error& e) {
        say("prefetch: " + std::string(e.what()));
    }
    return kExitFailure;
}

}  // namespace dlstage::cli
