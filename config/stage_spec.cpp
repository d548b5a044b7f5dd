#include "config/stage_spec.hpp"

#include <cctype>
#include <map>

#include "facts/dataset_format.hpp"
#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "policies/split_placement.hpp"
#include "policies/tier_choice.hpp"

namespace dlstage {

namespace {
constexpr const char* kExample = "e.g. --stage-data=imagenet:shm,/p/scratch/me/data.sqfs";

// "split" or "whole" after the tier: how the dataset is laid over the
// job's nodes.
std::optional<Placement> placement_word(const std::string& word)
{
    if (word == "split")
        return Placement::Split;
    if (word == "whole")
        return Placement::Whole;
    return std::nullopt;
}

// Takes a trailing ":split" or ":whole" off entry into request.placement.
std::string without_placement(const std::string& entry, StageRequest& request)
{
    const std::size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0)
        return entry;
    request.placement = placement_word(entry.substr(colon + 1));
    if (!request.placement)
        return entry;
    const std::string rest = entry.substr(0, colon);
    if (rest.find(':') == std::string::npos)
        throw Error("missing tier before ':" + entry.substr(colon + 1) + "' in " + quoted(entry) +
                    " (e.g. --stage-data=in21k:shm:split; NAME::split for the default tier)");
    return rest;
}

StageRequest parse_path_entry(const std::string& whole_entry)
{
    StageRequest request;
    request.text = whole_entry;
    request.is_path = true;
    const std::string entry = without_placement(whole_entry, request);
    request.name = entry;
    // "/p/x:shm": the text after the last ':' is a tier when it looks like
    // one; a ':' inside a directory name stays part of the path.
    const std::size_t colon = entry.rfind(':');
    if (colon != std::string::npos) {
        const std::string tier = entry.substr(colon + 1);
        if (tier.empty() && request.placement)
            request.name = entry.substr(0, colon);
        else if (tier.empty())
            throw Error("missing tier after ':' in " + quoted(entry) + " (" + kExample + ")");
        else if (is_simple_name(tier, false)) {
            request.name = entry.substr(0, colon);
            request.tier = tier;
        }
    }
    if (request.name == "/")
        throw Error("cannot stage the root directory '/'");
    return request;
}

StageRequest parse_name_entry(const std::string& whole_entry)
{
    StageRequest request;
    request.text = whole_entry;
    const std::string entry = without_placement(whole_entry, request);
    const auto parts = split(entry, ':');
    if (parts.size() > 2)
        throw Error("malformed entry " + quoted(whole_entry) + ": expected NAME[:TIER[:split|whole]] (" + kExample +
                    ")");
    request.name = parts[0];
    if (request.name.find('/') != std::string::npos)
        throw Error(quoted(request.name) + " is neither a dataset name nor an absolute path (paths start with '/')");
    if (!is_simple_name(request.name, true))
        throw Error("invalid dataset name " + quoted(request.name) +
                    ": names are letters, digits, '_', '-' or '.' (see 'dlstage catalog list')");
    if (parts.size() == 2 && !(parts[1].empty() && request.placement)) {
        request.tier = parts[1];
        if (request.tier.empty())
            throw Error("missing tier after ':' in " + quoted(entry) + " (" + kExample + ")");
        if (!is_simple_name(request.tier, false))
            throw Error("invalid tier name " + quoted(request.tier) + " in " + quoted(entry));
    }
    return request;
}

std::string list_or_none(const std::vector<std::string>& names)
{
    return names.empty() ? "none" : join(names, ", ");
}

Dataset dataset_for_path(const Config& config, const StageRequest& request)
{
    policy::require(policy::path_allowed(config.site.allow_paths, request.name));
    Dataset dataset;
    dataset.name = dataset_name_for_path(request.name);
    dataset.source = request.name;
    dataset.tiers = config.tier_names();
    dataset.description = "path given by the user";
    dataset.from_catalog = false;
    return dataset;
}

Dataset dataset_for_name(const Config& config, const StageRequest& request)
{
    const Dataset* dataset = config.find_dataset(request.name);
    if (!dataset) {
        const auto known = config.dataset_names();
        const std::string hint = closest_match(request.name, known);
        throw Error("unknown dataset " + quoted(request.name) + " (known: " + list_or_none(known) + ")" +
                    (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    return *dataset;
}

const Tier& tier_for(const Config& config, const StageRequest& request, const Dataset& dataset)
{
    const policy::TierChoice choice = policy::choose_tier(
        {request.name, request.tier, request.is_path, config.site.default_tier, dataset.tiers, config.tier_names()});
    policy::require(choice.verdict);
    const Tier* tier = config.find_tier(choice.tier);
    if (!tier)
        throw Error("unknown tier " + quoted(choice.tier) + " (known: " + join(config.tier_names(), ", ") + ")");
    policy::require(policy::tier_allowed(dataset.name, dataset.tiers, choice.tier));
    return *tier;
}
}  // namespace

std::vector<StageRequest> parse_stage_specs(std::string_view value)
{
    const std::string text = trim(value);
    if (text.empty())
        throw Error(std::string("--stage-data needs at least one dataset (") + kExample + ")");
    std::vector<StageRequest> requests;
    for (const std::string& raw : split(text, ',')) {
        const std::string entry = trim(raw);
        if (entry.empty())
            throw Error("empty entry in --stage-data=" + printable(text) + " (remove the extra ',')");
        requests.push_back(entry.front() == '/' ? parse_path_entry(entry) : parse_name_entry(entry));
    }
    return requests;
}

std::vector<StageItem> resolve_stage_requests(const Config& config, const std::vector<StageRequest>& requests)
{
    std::vector<StageItem> items;
    std::map<std::string, std::size_t> item_by_env;  // DLSTAGE_X -> index in items
    for (const StageRequest& request : requests) {
        Dataset dataset = request.is_path ? dataset_for_path(config, request) : dataset_for_name(config, request);
        const Tier& tier = tier_for(config, request, dataset);
        const std::string env = dataset_env_name(dataset.name);
        if (auto [it, fresh] = item_by_env.emplace(env, items.size()); !fresh) {
            const Dataset& earlier = items[it->second].dataset;
            if (earlier.source == dataset.source)
                throw Error("dataset " + quoted(dataset.name) +
                            " is requested twice in --stage-data; stage it once, to one tier");
            throw Error(quoted(earlier.from_catalog ? earlier.name : earlier.source) + " and " + quoted(request.name) +
                        " would both be exported as " + env + "; stage one of them, or rename the file");
        }
        StageItem item;
        item.dataset = std::move(dataset);
        item.tier = tier;
        item.env_name = env;
        item.split = policy::placed_split(request.placement, item.dataset, item.tier);
        items.push_back(std::move(item));
    }
    // A split dataset's index is DLSTAGE_<NAME>_INDEX: no other may be that.
    for (const StageItem& split : items)
        for (const StageItem& other : items)
            if (split.split && other.env_name == split.env_name + kSplitIndexVarSuffix)
                throw Error(quoted(other.dataset.name) + " would be exported as " + other.env_name +
                            ", which names the index of split dataset " + quoted(split.dataset.name) +
                            "; stage one of them under another name");
    return items;
}

std::vector<StageItem> resolve_stage_data(const Config& config, std::string_view value)
{
    return resolve_stage_requests(config, parse_stage_specs(value));
}

std::string dataset_name_for_path(const std::string& path)
{
    std::string trimmed = path;
    while (trimmed.size() > 1 && trimmed.back() == '/')
        trimmed.pop_back();
    std::string base = trimmed.substr(trimmed.rfind('/') + 1);
    if (is_glob(base)) {
        const std::string dir = trimmed.substr(0, trimmed.rfind('/'));
        base = dir.substr(dir.rfind('/') + 1);
    }
    if (const std::string_view suffix = archive_suffix(base); !suffix.empty() && base.size() > suffix.size())
        base.resize(base.size() - suffix.size());
    for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            c = '_';
    if (!is_simple_name(base, true))
        throw Error("cannot derive a dataset name from " + quoted(path) +
                    ": the last path component must start with a letter or digit");
    return base;
}

std::string tier_directory(const StageItem& item, const TemplateValues& values)
{
    return item.tier.path.expand(values);
}

}  // namespace dlstage
