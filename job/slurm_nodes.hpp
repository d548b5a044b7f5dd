// What Slurm says of nodes' features, and root's change of one node's:
// `scontrol show node -o NODE` and `scontrol update NodeName=NODE
// AvailableFeatures=... ActiveFeatures=...`, a partition's nodes (sinfo),
// pending jobs' preferences (squeue) and root's clearing of one
// (scontrol update JobId=... Prefer=), each bounded in time
// (job/slurm_jobs's slurm_answer).  Which features are dlstage's is policies/node_features.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct NodeFeatures {
    std::vector<std::string> available;  // AvailableFeatures
    std::vector<std::string> active;     // ActiveFeatures (a node_features plugin may make them differ)
    std::string state;                   // State= (IDLE, IDLE+DRAIN, DOWN+NOT_RESPONDING, ...)
};

// A feature list as Slurm prints it: comma-separated, "(null)" or "" for none.
std::vector<std::string> parse_feature_list(std::string_view text);
std::string feature_list_text(const std::vector<std::string>& features);

// `scontrol show node -o NODE`'s one line: nothing without both fields.
std::optional<NodeFeatures> parse_node_features(std::string_view line);

// Asks slurmctld; nothing with `problem` set when it did not answer.
std::optional<NodeFeatures> ask_node_features(const std::string& node, int timeout_seconds, std::string& problem);

// Root (or SlurmUser) only: sets both lists; "" or the problem.
std::string set_node_features(const std::string& node, const NodeFeatures& features, int timeout_seconds);

// A node of a partition as sinfo shows it: -N -o "%N|%P|%T|%c|%m|%b"
// (the default partition's name ends in '*').
struct PartitionNodeRow {
    std::string node;
    std::string partition;  // without the '*'
    bool default_partition = false;
    std::string state;  // %T: idle, mixed, drained, down*, ...
    std::uint64_t cpus = 0;
    std::uint64_t memory_mib = 0;  // RealMemory
    std::vector<std::string> features;
};
inline constexpr const char* kPartitionNodesFormat = "%N|%P|%T|%c|%m|%b";
// sinfo's rows, each node once (its first row); nothing when a row
// cannot be read.
std::optional<std::vector<PartitionNodeRow>> parse_partition_nodes(std::string_view text);

// The nodes of `partitions` (comma-separated, as -p takes them; "": the
// default partition), each once.  Nothing when sinfo did not answer
// (`problem` says why); none when Slurm knows no such partition.  With
// `env`, sinfo gets that environment.
std::optional<std::vector<PartitionNodeRow>> ask_partition_nodes(const std::string& partitions, int timeout_seconds,
                                                                 std::string& problem,
                                                                 const std::vector<std::string>* env = nullptr);

// A pending job's --prefer and why it waits: squeue -t pending
// -O "JobID:|,Prefer:|,Reason:|" (Slurm 22.05 and later).
struct PendingPreference {
    std::string job;
    std::string prefer;  // "" or "(null)": none
    std::string reason;
};
std::optional<std::vector<PendingPreference>> parse_pending_preferences(std::string_view text);
std::optional<std::vector<PendingPreference>> ask_pending_preferences(int timeout_seconds, std::string& problem);

// Root (or SlurmUser): the job's --prefer taken away; "" or the problem.
std::string clear_job_prefer(const std::string& job, int timeout_seconds);

}  // namespace dlstage
