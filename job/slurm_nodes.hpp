// What Slurm says of nodes' features, and root's change of one node's:
// `scontrol show node -o NODE` and `scontrol update NodeName=NODE
// AvailableFeatures=... ActiveFeatures=...`, and for anyone `sinfo`'s
// feature column of every node, each bounded in time (job/slurm_jobs's
// slurm_answer).  Which features are dlstage's is policies/node_features.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlstage {

struct NodeFeatures {
    std::vector<std::string> available;  // AvailableFeatures
    std::vector<std::string> active;     // ActiveFeatures (a node_features plugin may make them differ)
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

// Every node's active features, by node: sinfo -h -N -o "%N|%b" (a node in
// several partitions once).  Nothing when sinfo did not answer.
std::optional<std::map<std::string, std::vector<std::string>>> parse_sinfo_features(std::string_view text);
std::optional<std::map<std::string, std::vector<std::string>>> ask_active_features(int timeout_seconds,
                                                                                   std::string& problem);

}  // namespace dlstage
