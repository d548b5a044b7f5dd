#include "policies/node_features.hpp"

#include <algorithm>
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
    // A name that reads back as another entry's (a dataset called a_of2,
    // whole, is not a's share of 2) is told apart by the hash too.
    const auto back = entry_of_feature(settings, whole);
    const bool reads_back = back && !back->cut && back->entry.dataset == entry.dataset &&
                            back->entry.shares == entry.shares && back->entry.uid == entry.uid;
    if (whole.size() <= most && reads_back)
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

std::optional<FeatureEntry> entry_of_feature(const LocalitySettings& settings, std::string_view feature)
{
    if (!is_dlstage_feature(settings, feature))
        return std::nullopt;
    std::string_view rest = feature.substr(settings.feature_prefix.size());
    const auto digits = [](std::string_view text) {
        return !text.empty() && text.size() <= 10 && text.find_first_not_of("0123456789") == std::string_view::npos;
    };
    // ..._uUID, ..._ofN_uUID, a cut name's ..._hHASH before them.
    const std::size_t u = rest.rfind("_u");
    if (u == std::string_view::npos || u == 0 || !digits(rest.substr(u + 2)))
        return std::nullopt;
    FeatureEntry out;
    out.entry.uid = std::stoul(std::string(rest.substr(u + 2)));
    rest = rest.substr(0, u);
    if (const std::size_t of = rest.rfind("_of");
        of != std::string_view::npos && of > 0 && digits(rest.substr(of + 3))) {
        out.entry.shares = std::stoul(std::string(rest.substr(of + 3)));
        rest = rest.substr(0, of);
    }
    if (const std::size_t h = rest.rfind("_h");
        h != std::string_view::npos && rest.size() - h == 10 &&
        rest.substr(h + 2).find_first_not_of("0123456789abcdef") == std::string_view::npos) {
        out.cut = true;
        rest = rest.substr(0, h);
    }
    if (rest.empty())
        return std::nullopt;
    out.entry.dataset = std::string(rest);
    return out;
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

namespace {
// How many nodes that may take jobs hold every one of `features`.
std::size_t nodes_holding(const std::vector<NodeHolding>& nodes, const std::vector<std::string>& features)
{
    return static_cast<std::size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const NodeHolding& node) {
        return node.may_take_jobs && std::all_of(features.begin(), features.end(),
                                                 [&](const std::string& f) { return node.features.count(f) > 0; });
    }));
}

std::string joined(const std::vector<std::string>& features)
{
    std::string text;
    for (const std::string& feature : features)
        text += (text.empty() ? "" : "&") + feature;
    return text;
}
}  // namespace

Preference job_preference(const PreferenceFacts& facts)
{
    if (facts.wanted.empty())
        return {};
    if (!facts.users_prefer.empty())
        return {"", "the job's own --prefer is kept"};
    if (facts.nodes_asked == 0)
        return {"", "the job names or leaves out nodes, takes a reservation's, or spreads tasks over a number of "
                    "nodes submit cannot know (-N)"};
    std::vector<std::string> held;
    for (const std::string& feature : facts.wanted)
        if (nodes_holding(facts.nodes, {feature}) >= facts.nodes_asked)
            held.push_back(feature);
    if (held.empty())
        return {"", "no " + std::to_string(facts.nodes_asked) + " node(s) of its partition that may take jobs hold it"};
    if (held.size() > 1 && nodes_holding(facts.nodes, held) >= facts.nodes_asked)
        return {joined(held), "nodes holding all of them"};
    return {held.front(), "nodes holding it"};
}

bool prefer_is_dlstages(const LocalitySettings& settings, std::string_view prefer)
{
    if (prefer.empty())
        return false;
    std::size_t from = 0;
    while (from <= prefer.size()) {
        const std::size_t amp = prefer.find('&', from);
        const std::string_view part = prefer.substr(from, amp == std::string_view::npos ? amp : amp - from);
        if (!is_dlstage_feature(settings, part) || part.find_first_of("|*[]()!,") != std::string_view::npos)
            return false;
        if (amp == std::string_view::npos)
            break;
        from = amp + 1;
    }
    return true;
}

Verdict entry_attracts(const EntrySourceLook& look)
{
    if (!look.record_read)
        return Verdict::refuse("its ready record could not be read");
    if (!look.same_source)
        return Verdict::refuse("the catalog names another source for it now");
    if (!look.looked)
        return Verdict::allow();  // not for this node to say: the job's own check decides
    if (!look.present)
        return Verdict::refuse("its source is gone or unreadable");
    // A later ctime is a change since (no user can set a ctime back); a
    // later scan, the dataset scanned again since.
    if (look.newest_ctime > look.known_current || look.manifest_scanned > look.known_current)
        return Verdict::refuse("its source changed since it was cached here");
    return Verdict::allow();
}

}  // namespace dlstage::policy
