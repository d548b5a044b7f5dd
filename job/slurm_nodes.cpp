#include "job/slurm_nodes.hpp"

#include <algorithm>

#include "job/slurm_jobs.hpp"
#include "lib/error.hpp"
#include "lib/number.hpp"
#include "lib/strings.hpp"
#include "lib/sys/process.hpp"

namespace dlstage {

namespace {
// The value of " KEY=VALUE" in scontrol's one-line form (values hold no space).
std::optional<std::string> field_of(std::string_view line, const std::string& key)
{
    const std::string mark = key + "=";
    std::size_t at = 0;
    while ((at = line.find(mark, at)) != std::string_view::npos) {
        if (at == 0 || line[at - 1] == ' ') {
            const std::size_t from = at + mark.size();
            const std::size_t end = line.find(' ', from);
            return std::string(line.substr(from, end == std::string_view::npos ? line.size() - from : end - from));
        }
        at += mark.size();
    }
    return std::nullopt;
}

// A Slurm command's answer read by `parse`: nothing, with `problem` set,
// when the command did not answer or its answer is not `form`.
template <typename Parse>
auto parsed_answer(const std::vector<std::string>& argv, const std::string& name, int timeout_seconds,
                   std::string& problem, const std::string& form, Parse parse,
                   const std::vector<std::string>* env = nullptr) -> decltype(parse(std::string_view()))
{
    const auto answer =
        slurm_answer(bounded_command(argv, timeout_seconds), name, timeout_seconds, problem, nullptr, env);
    if (!answer)
        return std::nullopt;
    auto parsed = parse(*answer);
    if (!parsed)
        problem = name + "'s answer is not " + form + " (it begins: " + first_line(*answer) + ")";
    return parsed;
}
}  // namespace

std::vector<std::string> parse_feature_list(std::string_view text)
{
    std::vector<std::string> features;
    const std::string list = trim(std::string(text));
    if (list.empty() || list == "(null)")
        return features;
    for (const std::string& feature : split(list, ','))
        if (!feature.empty())
            features.push_back(feature);
    return features;
}

std::string feature_list_text(const std::vector<std::string>& features)
{
    std::string text;
    for (const std::string& feature : features)
        text += (text.empty() ? "" : ",") + feature;
    return text;
}

std::optional<NodeFeatures> parse_node_features(std::string_view line)
{
    const auto available = field_of(line, "AvailableFeatures");
    const auto active = field_of(line, "ActiveFeatures");
    if (!available || !active)
        return std::nullopt;
    return NodeFeatures{parse_feature_list(*available), parse_feature_list(*active),
                        field_of(line, "State").value_or("")};
}

std::optional<NodeFeatures> ask_node_features(const std::string& node, int timeout_seconds, std::string& problem)
{
    return parsed_answer({"scontrol", "--oneliner", "show", "node", node}, "scontrol show node", timeout_seconds,
                         problem, "a line with AvailableFeatures= and ActiveFeatures=", parse_node_features);
}

std::string set_node_features(const std::string& node, const NodeFeatures& features, int timeout_seconds)
{
    std::string problem;
    slurm_answer(bounded_command({"scontrol", "update", "NodeName=" + node,
                                  "AvailableFeatures=" + feature_list_text(features.available),
                                  "ActiveFeatures=" + feature_list_text(features.active)},
                                 timeout_seconds),
                 "scontrol update NodeName=" + node, timeout_seconds, problem);
    return problem;
}

std::optional<std::vector<PartitionNodeRow>> parse_partition_nodes(std::string_view text)
{
    std::vector<PartitionNodeRow> rows;
    for (const std::string& line : split(text, '\n')) {
        if (trim(line).empty())
            continue;
        const std::vector<std::string> f = split(trim(line), '|');
        if (f.size() != 6 || f[0].empty() || f[1].empty())
            return std::nullopt;
        PartitionNodeRow row{f[0], f[1], false, f[2], 0, 0, parse_feature_list(f[5])};
        try {
            row.cpus = parse_count(f[3], 0, kMaxSlurmNumber);
            row.memory_mib = parse_count(f[4], 0, kMaxSlurmNumber);
        } catch (const Error&) {
            return std::nullopt;
        }
        if (row.partition.back() == '*') {
            row.partition.pop_back();
            row.default_partition = true;
        }
        if (std::none_of(rows.begin(), rows.end(), [&](const PartitionNodeRow& seen) { return seen.node == row.node; }))
            rows.push_back(std::move(row));
    }
    return rows;
}

std::optional<std::vector<PartitionNodeRow>> ask_partition_nodes(const std::string& partitions, int timeout_seconds,
                                                                 std::string& problem,
                                                                 const std::vector<std::string>* env)
{
    std::vector<std::string> argv{"sinfo", "--noheader", "--Node", std::string("--format=") + kPartitionNodesFormat};
    if (!partitions.empty())
        argv.push_back("--partition=" + partitions);
    auto rows = parsed_answer(argv, "sinfo", timeout_seconds, problem, "lines of " + std::string(kPartitionNodesFormat),
                              parse_partition_nodes, env);
    if (!rows)
        return std::nullopt;
    if (partitions.empty())
        rows->erase(std::remove_if(rows->begin(), rows->end(),
                                   [](const PartitionNodeRow& row) { return !row.default_partition; }),
                    rows->end());
    return rows;
}

std::optional<std::vector<PendingPreference>> parse_pending_preferences(std::string_view text)
{
    std::vector<PendingPreference> jobs;
    for (const std::string& line : split(text, '\n')) {
        if (trim(line).empty())
            continue;
        // The reason may hold spaces and commas, never a '|'.
        const std::vector<std::string> f = split(trim(line), '|');
        const std::string id = trim(f[0]);  // an array's tasks: 26_3, 26_[4-9]
        if (f.size() < 3 || !is_job_id(id.substr(0, id.find('_'))))
            return std::nullopt;
        std::string prefer = trim(f[1]);
        if (prefer == "(null)")
            prefer.clear();
        jobs.push_back({trim(f[0]), prefer, trim(f[2])});
    }
    return jobs;
}

std::optional<std::vector<PendingPreference>> ask_pending_preferences(int timeout_seconds, std::string& problem)
{
    return parsed_answer({"squeue", "--noheader", "--all", "--states=PENDING", "--Format=JobID:|,Prefer:|,Reason:|"},
                         "squeue", timeout_seconds, problem, "lines of JOBID|PREFER|REASON", parse_pending_preferences);
}

std::string clear_job_prefer(const std::string& job, int timeout_seconds)
{
    std::string problem;
    slurm_answer(bounded_command({"scontrol", "update", "JobId=" + job, "Prefer="}, timeout_seconds),
                 "scontrol update JobId=" + job, timeout_seconds, problem);
    return problem;
}

}  // namespace dlstage
