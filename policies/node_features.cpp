#include "policies/node_features.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace dlstage::policy {

namespace {

// FNV-1a: a cut name's tail, the same on every node and in every release.
std::uint32_t name_hash(std::string_view text)
{
    std::uint32_t hash = 2166136261u;
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 16777619u;
    }
    return hash;
}

}  // namespace

bool valid_feature_prefix(std::string_view prefix)
{
    if (prefix.empty() || prefix.size() > 16 || !std::isalpha(static_cast<unsigned char>(prefix.front())))
        return false;
    for (const char c : prefix)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return false;
    return true;
}

std::string entry_feature(const LocalitySettings& settings, const CachedEntryFacts& entry)
{
    std::string tail = "_u" + std::to_string(entry.uid);
    if (entry.shares > 0)
        tail = "_of" + std::to_string(entry.shares) + tail;
    const std::string whole = settings.feature_prefix + entry.dataset + tail;
    const std::size_t most = static_cast<std::size_t>(settings.feature_max_length);
    if (whole.size() <= most)
        return whole;
    char hash[16];
    std::snprintf(hash, sizeof hash, "_h%08x", name_hash(whole));
    const std::string end = std::string(hash) + tail;
    const std::size_t room =
        most > settings.feature_prefix.size() + end.size() ? most - settings.feature_prefix.size() - end.size() : 0;
    return settings.feature_prefix + entry.dataset.substr(0, room) + end;
}

bool is_dlstage_feature(const LocalitySettings& settings, std::string_view feature)
{
    return feature.size() > settings.feature_prefix.size() &&
           feature.substr(0, settings.feature_prefix.size()) == settings.feature_prefix;
}

std::set<std::string> features_after(const std::set<std::string>& ours_now, const std::set<std::string>& named,
                                     FeatureChange change)
{
    if (change == FeatureChange::Replace)
        return named;
    std::set<std::string> after = ours_now;
    for (const std::string& feature : named) {
        if (change == FeatureChange::Add)
            after.insert(feature);
        else
            after.erase(feature);
    }
    return after;
}

std::vector<std::string> node_features_with(const std::vector<std::string>& current, const std::set<std::string>& ours,
                                            const LocalitySettings& settings)
{
    std::vector<std::string> features;
    for (const std::string& feature : current)
        if (!feature.empty() && !is_dlstage_feature(settings, feature))
            features.push_back(feature);
    features.insert(features.end(), ours.begin(), ours.end());
    return features;
}

std::set<std::string> dlstage_features_of(const std::vector<std::string>& current, const LocalitySettings& settings)
{
    std::set<std::string> ours;
    for (const std::string& feature : current)
        if (is_dlstage_feature(settings, feature))
            ours.insert(feature);
    return ours;
}

}  // namespace dlstage::policy
