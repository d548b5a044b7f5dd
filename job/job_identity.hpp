// What overrides and the memory check are decided on, gathered where each
// side can know it (policies/overrides, policies/admission decide):
//
//   submit (sbatch, salloc, srun; as the user): the partition, account and
//     --mem as Slurm's own option parser left them (command line, #SBATCH
//     lines, SBATCH_* variables; spank/slurm_spank_api reads them), the user
//     and their groups from the user and group databases;
//   job_prolog (root): partition and account from slurmd (SLURM_JOB_PARTITION
//     and SLURM_JOB_ACCOUNT, from the job's credential: nothing the user can
//     set), user from slurmd, groups from the group database; no memory;
//   in the job (`dlstage stage`, the stager; as the user): Slurm's job
//     variables, SLURM_MEM_PER_NODE or SLURM_MEM_PER_CPU for memory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "policies/admission.hpp"
#include "policies/overrides.hpp"

namespace dlstage {

using EnvLookup = std::function<std::string(const std::string&)>;  // "" when unset

// The Unix groups of a user (primary and supplementary, by name, as
// getgrouplist gives them); empty when the user is unknown.
std::vector<std::string> unix_groups(const std::string& user);

// A job's partition and account as Slurm's variables name them (job
// environment, or the prolog's from slurmd), its user (SLURM_JOB_USER, else
// `user`) and, with_groups, that user's groups.  A list of partitions
// ("a,b", before the job runs) is not known.
policy::JobIdentity identity_from_slurm(const EnvLookup& env, const std::string& user, bool with_groups = true);

// The names a Slurm host list stands for, in its order ("n[1-3],x[01-02]":
// n1 n2 n3 x01 x02; "r[1-2]x[1-2]": r1x1 r1x2 r2x1 r2x2); nothing when it is
// empty, malformed or names more than `most`.  The prolog's look at the
// job's nodes (slurmd's SLURM_NODELIST, in the job's node order): how many,
// and which one this node is, for a split dataset's share.
std::optional<std::vector<std::string>> expand_host_list(std::string_view list, std::size_t most = 100000);

// The same from a submitting client's options (nothing: not given).
policy::JobIdentity identity_from_options(const std::optional<std::string>& partition,
                                          const std::optional<std::string>& account, const std::string& user);

// The job's memory per node from Slurm's job variables: SLURM_MEM_PER_NODE
// (megabytes), else SLURM_MEM_PER_CPU times the fewest CPUs the job has on
// a node (SLURM_JOB_CPUS_PER_NODE, "4(x2),2"); unknown otherwise, or 0
// ("all of the node").
policy::JobMemory memory_from_slurm(const EnvLookup& env);

// From a client's --mem as Slurm prints it ("64G", "4000": megabytes);
// unknown when not given, 0, or not a size.
policy::JobMemory memory_from_option(const std::optional<std::string>& mem);

// This process's environment as an EnvLookup.
std::string process_env(const std::string& name);

// In the job (`dlstage stage`, the stager): the configuration with every
// tier as this job gets it, from Slurm's job variables (identity_from_slurm).
Config config_for_this_job(const Config& config);

// "64G", "4000M": megabytes as --mem takes them.
std::string megabytes_text(std::uint64_t megabytes);

}  // namespace dlstage
