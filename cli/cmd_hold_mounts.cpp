// dlstage hold-mounts --job ID SPEC: the mount holder on one node
// (internal, started by `dlstage stage` as a job step; see mounts/).
#include "cli/commands.hpp"
#include "config/config_paths.hpp"
#include "lib/contract.hpp"
#include "mounts/mount_holder.hpp"

namespace dlstage::cli {

int cmd_hold_mounts(const GlobalOptions& options, const std::vector<std::string>& args)
{
    if (args.size() != 3 || args[0] != "--job")
        return usage_error("hold-mounts --job ID SPEC is started by 'dlstage stage'; it is not for direct use",
                           kHoldMountsCommand);
    const Config config = load_config_for_caller(choose_config_path(options.config_path, true));
    return mounts::hold_mounts(config, args[1], args[2]);
}

}  // namespace dlstage::cli
