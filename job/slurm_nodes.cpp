#include "job/slurm_nodes.hpp"

#include "job/slurm_jobs.hpp"
#include "lib/strings.hpp"

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
    return NodeFeatures{parse_feature_list(*available), parse_feature_list(*active)};
}

std::optional<NodeFeatures> ask_node_features(const std::string& node, int timeout_seconds, std::string& problem)
{
    const auto answer = slurm_answer(bounded_command({"scontrol", "--oneliner", "show", "node", node}, timeout_seconds),
                                     "scontrol show node", timeout_seconds, problem);
    if (!answer)
        return std::nullopt;
    auto features = parse_node_features(*answer);
    if (!features)
        problem = "scontrol show node " + node + " says no AvailableFeatures= and ActiveFeatures=";
    return features;
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

std::optional<std::map<std::string, std::vector<std::string>>> parse_sinfo_features(std::string_view text)
{
    std::map<std::string, std::vector<std::string>> by_node;
    for (const std::string& line : split(text, '\n')) {
        if (trim(line).empty())
            continue;
        const std::size_t bar = line.find('|');
        if (bar == std::string::npos || bar == 0)
            return std::nullopt;
        by_node[line.substr(0, bar)] = parse_feature_list(std::string_view(line).substr(bar + 1));
    }
    return by_node;
}

std::optional<std::map<std::string, std::vector<std::string>>> ask_active_features(int timeout_seconds,
                                                                                   std::string& problem)
{
    const auto answer =
        slurm_answer(bounded_command({"sinfo", "--noheader", "--Node", "--format=%N|%b"}, timeout_seconds), "sinfo",
                     timeout_seconds, problem);
    if (!answer)
        return std::nullopt;
    auto features = parse_sinfo_features(*answer);
    if (!features)
        problem = "sinfo's answer is not lines of NODE|FEATURES";
    return features;
}

}  // namespace dlstage
