// Two-hop staging at submit (sbatch, salloc, srun creating a job; as the
// user): for each reach = "mover" dataset the job's nodes cannot read,
// the user's copy in its via tier serves the job as it is, or a mover job
// makes it (mover/) and the job waits for that job: its own dependency
// gets afterok on it (Slurm's dependency machinery: the job holds no
// nodes meanwhile), sbatch's --kill-on-invalid-dep=yes ends it if the
// mover fails, and its comment names the mover for `dlstage status`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "facts/stage_item.hpp"
#include "spank/spank_api.hpp"

namespace dlstage::spank {

// Throws Error (one line) when the job cannot be made to wait; a mover job
// submitted for it is then cancelled again.  salloc and srun (no
// --kill-on-invalid-dep) start `dlstage_path watch-movers` beside them
// (mover/mover_watch).
void wait_for_movers(SpankApi& api, const Config& config, const std::vector<StageItem>& items, const std::string& user,
                     const std::optional<std::string>& partition, const std::string& dlstage_path);

// At the client's exit (slurm_spank_exit): a mover job it submitted that
// no job of the user's waits for (Slurm refused the job after the plugin
// submitted the mover, or the job was given up while it waited) is
// cancelled, so that no mover job is left queued for nothing.
void settle_movers(SpankApi& api);

}  // namespace dlstage::spank
