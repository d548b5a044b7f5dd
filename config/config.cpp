#include "config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

#include <toml++/toml.h>

#include "lib/contract.hpp"
#include "lib/error.hpp"
#include "lib/strings.hpp"
#include "lib/sys/fd.hpp"
#include "lib/sys/read_all.hpp"
#include "lib/sys/sys_error.hpp"
#include "policies/node_features.hpp"
#include "policies/split_placement.hpp"
#include "policies/staging_mode.hpp"
#include "policies/tier_settings.hpp"

namespace dlstage {

namespace {
// sbatch --mem's form: a whole number, then an optional unit.
bool valid_slurm_memory(const std::string& text)
{
    const auto digits = text.find_first_not_of("0123456789");
    if (digits == 0 || text.empty())
        return false;
    return digits == std::string::npos ||
           (digits + 1 == text.size() && std::string("KMGTkmgt").find(text[digits]) != std::string::npos);
}


const char* type_name(toml::node_type type)
{
    switch (type) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
    }
}

const std::string kMaxBytesHelp = "a size such as \"100G\" or a share such as \"50%\"";

// Walks the parsed document, collecting every problem rather than stopping
// at the first: an admin fixing a file wants the whole list at once.
class Loader {
public:
    explicit Loader(std::string file) : file_(std::move(file)) {}

    Config load(const toml::table& root)
    {
        Config config;
        config.file = file_;
        check_keys(root, "", {"site", "tiers", "datasets", "overrides", "mover", "locality"});
        if (const auto* site = table_at(root, "site", "site"))
            load_site(*site, config.site);
        if (const auto* tiers = table_at(root, "tiers", "tiers"))
            load_tiers(*tiers, config);
        if (config.tiers.empty() && !has_problem_under("tiers"))
            problem(root.source(), "tiers", "no tiers defined: add a [tiers.NAME] table with a path");
        if (const auto* mover = table_at(root, "mover", "mover"))
            load_mover(*mover, config.mover);
        if (const auto* locality = table_at(root, "locality", "locality"))
            load_locality(*locality, config.locality);
        if (const auto* datasets = table_at(root, "datasets", "datasets"))
            load_datasets(*datasets, config);
        check_site_against_tiers(config);
        load_overrides(root, config);
        return config;
    }

    std::vector<ConfigProblem> problems;

private:
    std::string file_;
    toml::source_region default_tier_where_;
    bool mover_given_ = false;

    void problem(const toml::source_region& where, const std::string& key, const std::string& message)
    {
        problems.push_back({file_, static_cast<int>(where.begin.line), key, message});
    }

    bool has_problem_under(const std::string& prefix) const
    {
        return std::any_of(problems.begin(), problems.end(),
                           [&](const ConfigProblem& p) { return starts_with(p.key, prefix); });
    }

    static std::string dotted(const std::string& prefix, std::string_view key)
    {
        return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
    }

    // Unknown keys are errors: a typo such as "max_byte" must not silently
    // leave a tier without its limit.
    void check_keys(const toml::table& table, const std::string& prefix, const std::vector<std::string>& allowed)
    {
        for (auto&& [key, value] : table) {
            (void)value;
            const std::string name(key.str());
            if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
                problem(key.source(), dotted(prefix, name),
                        "unknown key" + did_you_mean(name, allowed) + " (known: " + join(allowed, ", ") + ")");
        }
    }

    const toml::table* table_at(const toml::table& parent, std::string_view key, const std::string& name)
    {
        const toml::node* node = parent.get(key);
        if (!node)
            return nullptr;
        if (!node->is_table()) {
            problem(node->source(), name, std::string("must be a table, not ") + type_name(node->type()));
            return nullptr;
        }
        return node->as_table();
    }

    // The node at key, or nullptr; reports a missing required key at the
    // line of the table that should hold it.
    const toml::node* node_at(const toml::table& table, std::string_view key, const std::string& name, bool required)
    {
        const toml::node* node = table.get(key);
        if (!node && required)
            problem(table.source(), name, "missing required key");
        return node;
    }

    std::optional<std::string> string_at(const toml::table& table, std::string_view key, const std::string& name,
                                         bool required)
    {
        const toml::node* node = node_at(table, key, name, required);
        if (!node)
            return std::nullopt;
        if (!node->is_string()) {
            problem(node->source(), name, std::string("must be a string, not ") + type_name(node->type()));
            return std::nullopt;
        }
        return std::string(node->as_string()->get());
    }

    std::optional<bool> bool_at(const toml::table& table, std::string_view key, const std::string& name)
    {
        const toml::node* node = node_at(table, key, name, false);
        if (!node)
            return std::nullopt;
        if (!node->is_boolean()) {
            problem(node->source(), name, std::string("must be true or false, not ") + type_name(node->type()));
            return std::nullopt;
        }
        return node->as_boolean()->get();
    }

    template <typename E>
    E choice_at(const toml::table& table, std::string_view key, const std::string& name, const NameTable<E>& choices,
                E fallback)
    {
        const auto text = string_at(table, key, name, false);
        if (!text)
            return fallback;
        std::vector<std::string> names;
        for (const auto& [choice_name, value] : choices) {
            if (*text == choice_name)
                return value;
            names.push_back(choice_name);
        }
        problem(table.get(key)->source(), name,
                "must be one of " + join(names, ", ") + ", not " + quoted(*text) + did_you_mean(*text, names));
        return fallback;
    }

    // site.KEY, a whole number from low to high, into `into` when given.
    void whole_number_at(const toml::table& table, const char* key, int low, int high, const char* unit, int& into)
    {
        const std::string where = std::string("site.") + key;
        const toml::node* node = node_at(table, key, where, false);
        if (!node)
            return;
        const auto value = node->value<std::int64_t>();
        if (!node->is_integer() || !value || *value < low || *value > high)
            problem(node->source(), where,
                    "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high) + " " + unit);
        else
            into = static_cast<int>(*value);
    }

    void load_site(const toml::table& table, SiteSettings& site)
    {
        check_keys(table, "site",
                   {"state_dir", "manifest_dir", "launcher", "default_tier", "allow_paths", "prolog_epilog_timeout",
                    "gc_grace", "gc_records_days", "cache_idle_days", "stall_timeout"});
        for (const auto& [key, into] :
             {std::pair{"state_dir", &site.state_dir}, {"manifest_dir", &site.manifest_dir}}) {
            const std::string where = std::string("site.") + key;
            if (auto dir = string_at(table, key, where, false)) {
                if (dir->empty() || dir->front() != '/')
                    problem(table.get(key)->source(), where, "must be an absolute path, not " + quoted(*dir));
                else
                    *into = *dir;
            }
        }
        if (auto launcher = string_at(table, "launcher", "site.launcher", false)) {
            if (trim(*launcher).empty())
                problem(table.get("launcher")->source(), "site.launcher",
                        "must not be empty (e.g. \"srun --mpi=pmix --overlap --ntasks-per-node=1\")");
            else
                site.launcher = *launcher;
        }
        if (auto tier = string_at(table, "default_tier", "site.default_tier", false)) {
            site.default_tier = *tier;
            default_tier_where_ = table.get("default_tier")->source();
        }
        if (const toml::node* node = node_at(table, "prolog_epilog_timeout", "site.prolog_epilog_timeout", false)) {
            const auto seconds = node->value<std::int64_t>();
            if (!node->is_integer() || !seconds || *seconds < 1 || *seconds > 3600)
                problem(node->source(), "site.prolog_epilog_timeout",
                        "must be a whole number of seconds from 1 to 3600, e.g. 60");
            else
                site.prolog_epilog_timeout = static_cast<int>(*seconds);
        }
        whole_number_at(table, "gc_grace", 0, 7 * 86400, "seconds, e.g. 300", site.gc_grace);
        whole_number_at(table, "stall_timeout", 0, 86400, "seconds, e.g. 300 (0: no watchdog)", site.stall_timeout);
        whole_number_at(table, "gc_records_days", 0, 36500, "days, e.g. 30 (0: records are kept)",
                        site.gc_records_days);
        whole_number_at(table, "cache_idle_days", 0, 36500, "days, e.g. 30 (0: only the watermarks evict)",
                        site.cache_idle_days);
        if (const auto allow = bool_at(table, "allow_paths", "site.allow_paths"))
            site.allow_paths = *allow;
    }

    // [locality]: node features for what node caches hold (policies/node_features).
    void load_locality(const toml::table& table, LocalitySettings& locality)
    {
        check_keys(table, "locality", {"node_features", "feature_prefix", "feature_max_length"});
        if (const auto on = bool_at(table, "node_features", "locality.node_features"))
            locality.node_features = *on;
        if (auto prefix = string_at(table, "feature_prefix", "locality.feature_prefix", false)) {
            if (!policy::valid_feature_prefix(*prefix))
                problem(table.get("feature_prefix")->source(), "locality.feature_prefix",
                        "must be 1 to 16 letters, digits or '_', starting with a letter, e.g. \"dls_\"");
            else
                locality.feature_prefix = *prefix;
        }
        if (const toml::node* node = node_at(table, "feature_max_length", "locality.feature_max_length", false)) {
            const auto length = node->value<std::int64_t>();
            if (!node->is_integer() || !length || *length < policy::kShortestFeatureMaximum || *length > 1024)
                problem(node->source(), "locality.feature_max_length",
                        "must be a whole number of characters from " + std::to_string(policy::kShortestFeatureMaximum) +
                            " to 1024, e.g. 64");
            else
                locality.feature_max_length = static_cast<int>(*length);
        }
    }

    void load_tiers(const toml::table& tiers, Config& config)
    {
        for (auto&& [key, value] : tiers) {
            const std::string name(key.str());
            const std::string prefix = "tiers." + name;
            if (!is_simple_name(name, false)) {
                problem(key.source(), prefix,
                        "a tier name must be letters, digits, '_' or '-', starting with a letter or digit");
                continue;
            }
            if (!value.is_table()) {
                problem(value.source(), prefix, std::string("must be a table, not ") + type_name(value.type()));
                continue;
            }
            if (auto tier = load_tier(name, *value.as_table(), prefix))
                config.tiers.emplace(name, std::move(*tier));
        }
        check_tier_roots(tiers, config);
    }

    // The escape a template's first level below its root starts with
    // ('j' for "/dev/shm/dlstage/%j"), or 0 for a fixed name.
    static char first_escape(const PathTemplate& path)
    {
        const std::string rest = path.text().substr(std::min(path.text().size(), path.root().size() + 1));
        return rest.size() >= 2 && rest[0] == '%' ? rest[1] : 0;
    }

    // Two tiers under one root must not name their first level by different
    // escapes: a user called "123" would own job 123's directory of the
    // other tier (the prolog gives a directory to whoever asks first).
    void check_tier_roots(const toml::table& tables, const Config& config)
    {
        for (auto a = config.tiers.begin(); a != config.tiers.end(); ++a)
            for (auto b = std::next(a); b != config.tiers.end(); ++b) {
                const char ea = first_escape(a->second.path), eb = first_escape(b->second.path);
                if (a->second.path.root() != b->second.path.root() || ea == eb)
                    continue;
                const toml::node* where = tables.get(b->first);
                problem(where ? where->source() : toml::source_region{}, "tiers." + b->first + ".path",
                        "shares its root " + quoted(a->second.path.root()) + " with tier " + quoted(a->first) +
                            ", whose directories there are named otherwise: their names could collide (a user "
                            "named like a job id); give each its own root");
            }
    }

    std::optional<Tier> load_tier(const std::string& name, const toml::table& table, const std::string& prefix)
    {
        check_keys(table, prefix,
                   {"path", "scope", "cleanup", "max_bytes", "max_inodes", "charge_memory", "purge_days", "purge_by",
                    "warn_days", "refresh_on_use", "high_watermark", "low_watermark", "placement"});
        Tier tier;
        tier.name = name;
        for (auto&& [key, value] : table) {
            (void)value;
            tier.origin[std::string(key.str())] = prefix;
        }
        tier.charge_memory = bool_at(table, "charge_memory", prefix + ".charge_memory");
        tier.scope = choice_at<Scope>(table, "scope", prefix + ".scope", scope_names(), Scope::Node);
        tier.cleanup = choice_at<Cleanup>(table, "cleanup", prefix + ".cleanup", cleanup_names(), Cleanup::JobEnd);
        tier.placement = placement_at(table, prefix);
        if (name == "split" || name == "whole")
            problem(table.source(), prefix,
                    "a tier may not be named " + quoted(name) + ": after a tier, --stage-data reads it as a placement");
        if (const policy::Verdict fits = policy::placement_fits_kind(tier); !fits.allowed)
            problem(table.get("placement")->source(), prefix + ".placement", fits.reason);
        load_max_bytes(table, prefix, tier);
        load_max_inodes(table, prefix, tier);
        load_purge(table, prefix, tier);
        load_watermarks(table, prefix, tier);

        const auto path = string_at(table, "path", prefix + ".path", true);
        if (!path)
            return std::nullopt;
        const auto& where = table.get("path")->source();
        try {
            tier.path = PathTemplate::parse(*path);
        } catch (const Error& e) {
            problem(where, prefix + ".path", e.what());
            return std::nullopt;
        }
        for (const policy::KeyProblem& wrong : policy::path_fits_kind(tier))
            problem(where, prefix + "." + wrong.key, wrong.message);
        if (const policy::Verdict fits = policy::charge_memory_fits_kind(tier); !fits.allowed)
            problem(table.get("charge_memory")->source(), prefix + ".charge_memory", fits.reason);
        return tier;
    }

    // Only a node cache evicts: elsewhere the keys would promise what
    // nothing does.
    void load_watermarks(const toml::table& table, const std::string& prefix, Tier& tier)
    {
        bool any = false;
        for (const auto& [key, into] :
             {std::pair{"high_watermark", &tier.watermarks.high}, std::pair{"low_watermark", &tier.watermarks.low}}) {
            const auto text = string_at(table, key, prefix + "." + key, false);
            if (!text)
                continue;
            any = true;
            try {
                *into = parse_share(*text);
            } catch (const Error& e) {
                problem(table.get(key)->source(), prefix + "." + key, e.what());
            }
        }
        if (!any)
            return;
        if (const policy::Verdict fits = policy::watermarks_fit_kind(tier); !fits.allowed)
            problem(table.source(), prefix, fits.reason);
        else if (tier.watermarks.low > tier.watermarks.high)
            problem(table.get("low_watermark") ? table.get("low_watermark")->source() : table.source(),
                    prefix + ".low_watermark", "must not be above high_watermark");
    }

    void load_purge(const toml::table& table, const std::string& prefix, Tier& tier)
    {
        const auto days = [&](const char* key, int& into) {
            const toml::node* node = node_at(table, key, prefix + "." + key, false);
            if (!node)
                return false;
            const auto value = node->value<std::int64_t>();
            if (!node->is_integer() || !value || *value < 1 || *value > 3650)
                problem(node->source(), prefix + "." + key, "must be a whole number of days from 1 to 3650, e.g. 90");
            else
                into = static_cast<int>(*value);
            return true;
        };
        const bool has_days = days("purge_days", tier.purge.days);
        const bool has_warn = days("warn_days", tier.purge.warn_days);
        tier.purge.by = choice_at<PurgeBy>(table, "purge_by", prefix + ".purge_by", purge_by_names(), PurgeBy::Atime);
        bool any = has_days || has_warn || table.contains("purge_by");
        if (table.contains("refresh_on_use")) {
            any = true;
            tier.purge.refresh_on_use =
                bool_at(table, "refresh_on_use", prefix + ".refresh_on_use").value_or(tier.purge.refresh_on_use);
        }
        if (!any)
            return;
        const auto& where = table.source();
        if (const policy::Verdict fits = policy::purge_fits_kind(tier); !fits.allowed)
            problem(where, prefix, fits.reason);
        else if (!has_days)
            problem(where, prefix + ".purge_days", "purge_by, warn_days and refresh_on_use need purge_days (e.g. 90)");
        else if (tier.purge.days > 0 && tier.purge.warn_days >= tier.purge.days)
            problem(where, prefix + ".warn_days",
                    "must be less than purge_days (" + std::to_string(tier.purge.days) + ")");
    }

    void load_max_bytes(const toml::table& table, const std::string& prefix, Tier& tier)
    {
        const toml::node* node = node_at(table, "max_bytes", prefix + ".max_bytes", false);
        if (!node)
            return;
        const std::string key = prefix + ".max_bytes";
        try {
            if (node->is_integer() && node->as_integer()->get() > 0) {
                const auto bytes = static_cast<std::uint64_t>(node->as_integer()->get());
                check_bare_byte_count(node->source(), key, bytes, std::to_string(bytes));
                tier.max_bytes = ByteLimit::of_bytes(bytes);
            } else if (node->is_string()) {
                const std::string text = trim(node->as_string()->get());
                tier.max_bytes = ByteLimit::parse(text);
                if (tier.max_bytes.kind == ByteLimit::Kind::Bytes && tier.max_bytes.bytes == 0)
                    problem(node->source(), key, "a limit of 0 bytes lets nothing be staged: give " + kMaxBytesHelp);
                else if (text.find_first_not_of("0123456789") == std::string::npos)
                    check_bare_byte_count(node->source(), key, tier.max_bytes.bytes, '"' + text + '"');
            } else {
                problem(node->source(), key, "must be " + kMaxBytesHelp);
            }
        } catch (const Error& e) {
            problem(node->source(), key, e.what());
        }
    }

    // A limit written as a bare number is in bytes, and below 1 MiB that is
    // almost always a missing unit: "max_bytes = 512" meant "512M" or "512G".
    // An explicit unit ("512K", "1000B") says it is meant.
    void check_bare_byte_count(const toml::source_region& where, const std::string& key, std::uint64_t bytes,
                               const std::string& as_written)
    {
        if (bytes >= (1u << 20))
            return;
        const std::string digits = std::to_string(bytes);
        problem(where, key,
                as_written + " is " + digits + (bytes == 1 ? " byte" : " bytes") + ": did you mean \"" + digits +
                    "M\"? (write \"" + digits + "B\" if you really mean bytes)");
    }

    void load_max_inodes(const toml::table& table, const std::string& prefix, Tier& tier)
    {
        const toml::node* node = node_at(table, "max_inodes", prefix + ".max_inodes", false);
        if (!node)
            return;
        if (!node->is_integer() || node->as_integer()->get() <= 0)
            problem(node->source(), prefix + ".max_inodes", "must be a positive integer, e.g. 2000000");
        else
            tier.max_inodes = static_cast<std::uint64_t>(node->as_integer()->get());
    }

    void load_datasets(const toml::table& datasets, Config& config)
    {
        std::map<std::string, std::string> env_owner;  // DLSTAGE_X -> dataset
        for (auto&& [key, value] : datasets) {
            const std::string name(key.str());
            const std::string prefix = "datasets." + name;
            if (!is_simple_name(name, true)) {
                problem(key.source(), prefix,
                        "a dataset name must be letters, digits, '_', '-' or '.', starting with a letter "
                        "or digit");
                continue;
            }
            if (name == kStageDataHelp) {
                problem(key.source(), prefix,
                        "the name is reserved: --stage-data=help lists the catalog; choose another name");
                continue;
            }
            const std::string env = dataset_env_name(name);
            if (env == kDatasetsVar) {
                problem(key.source(), prefix,
                        std::string("the name is reserved: ") + kDatasetsVar + " lists the staged datasets");
                continue;
            }
            // Reported, but the dataset is still checked: its other
            // problems belong in the same list.
            if (auto [it, fresh] = env_owner.emplace(env, name); !fresh)
                problem(key.source(), prefix,
                        "both '" + it->second + "' and '" + name + "' would be exported as " + env + ": rename one");
            if (!value.is_table()) {
                problem(value.source(), prefix, std::string("must be a table, not ") + type_name(value.type()));
                continue;
            }
            if (auto dataset = load_dataset(name, *value.as_table(), prefix, config))
                config.datasets.emplace(name, std::move(*dataset));
        }
    }

    std::optional<Dataset> load_dataset(const std::string& name, const toml::table& table, const std::string& prefix,
                                        const Config& config)
    {
        check_keys(table, prefix,
                   {"source", "format", "mode", "tiers", "description", "immutable", "reach", "via", "placement"});
        Dataset dataset;
        dataset.name = name;
        dataset.format = choice_at<Format>(table, "format", prefix + ".format", format_names(), Format::Auto);
        dataset.mode = choice_at<Mode>(table, "mode", prefix + ".mode", mode_names(), Mode::Copy);
        dataset.description = string_at(table, "description", prefix + ".description", false).value_or("");
        dataset.immutable = bool_at(table, "immutable", prefix + ".immutable").value_or(false);
        load_dataset_tiers(table, prefix, config, dataset);

        const auto source = string_at(table, "source", prefix + ".source", true);
        if (!source)
            return std::nullopt;
        if (source->empty() || source->front() != '/') {
            problem(table.get("source")->source(), prefix + ".source",
                    "must be an absolute path, not " + quoted(*source));
            return std::nullopt;
        }
        dataset.source = *source;
        check_mode_fits_format(table, prefix, dataset);
        load_reach(table, prefix, config, dataset);
        dataset.placement = placement_at(table, prefix);
        check_split_possible(table, prefix, config, dataset);
        return dataset;
    }

    // reach = "mover" needs a shared tier to pass through (via, one of the
    // dataset's tiers) and a partition for the mover jobs; via alone means
    // nothing.
    void load_reach(const toml::table& table, const std::string& prefix, const Config& config, Dataset& dataset)
    {
        dataset.reach = choice_at<Reach>(table, "reach", prefix + ".reach", reach_names(), Reach::Compute);
        const auto via = string_at(table, "via", prefix + ".via", false);
        const toml::node* where = table.get("reach") ? table.get("reach") : &table;
        if (dataset.reach != Reach::Mover) {
            if (via)
                problem(table.get("via")->source(), prefix + ".via",
                        "only a dataset with reach = \"mover\" passes through a tier: remove via, or add reach = "
                        "\"mover\"");
            return;
        }
        if (!config.mover.configured() && !mover_given_)
            problem(where->source(), prefix + ".reach",
                    "reach = \"mover\" needs a [mover] table with the partition mover jobs run on, e.g. partition = "
                    "\"xfer\"");
        if (!via) {
            problem(where->source(), prefix + ".via",
                    "reach = \"mover\" needs via, the shared tier the mover job copies into, e.g. via = \"scratch\"");
            return;
        }
        const Tier* tier = config.find_tier(*via);
        if (!tier || !tier->shared())
            problem(table.get("via")->source(), prefix + ".via",
                    "must name a tier with scope = \"shared\", not " + quoted(*via) +
                        (tier ? "" : " (known: " + join(config.tier_names(), ", ") + ")"));
        else if (std::find(dataset.tiers.begin(), dataset.tiers.end(), *via) == dataset.tiers.end())
            problem(table.get("via")->source(), prefix + ".via",
                    "tier " + quoted(*via) + " must also be one of the dataset's tiers: add it to tiers");
        dataset.via = *via;
    }

    // [mover]: the partition is required; account, qos, time_limit and
    // memory are passed to sbatch as they are, nodes is how many read in
    // parallel, cpus_per_task what each gets.
    void load_mover(const toml::table& table, MoverSettings& mover)
    {
        mover_given_ = true;  // a broken [mover] is reported once, not again by each dataset
        check_keys(table, "mover", {"partition", "account", "qos", "time_limit", "nodes", "cpus_per_task", "memory"});
        for (const auto& [key, into] : {std::pair{"partition", &mover.partition},
                                        {"account", &mover.account},
                                        {"qos", &mover.qos},
                                        {"time_limit", &mover.time_limit}}) {
            const std::string where = std::string("mover.") + key;
            if (auto value = string_at(table, key, where, std::string_view(key) == "partition")) {
                if (value->empty() || value->find_first_of(" \t\n,=") != std::string::npos)
                    problem(table.get(key)->source(), where,
                            "must be one Slurm name or value without blanks, commas or '=', not " + quoted(*value));
                else
                    *into = *value;
            }
        }
        for (const auto& [key, into, unit] :
             {std::tuple{"nodes", &mover.nodes, "nodes"}, std::tuple{"cpus_per_task", &mover.cpus_per_task, "CPUs"}}) {
            const std::string where = std::string("mover.") + key;
            if (const toml::node* node = node_at(table, key, where, false)) {
                const auto count = node->value<std::int64_t>();
                if (!node->is_integer() || !count || *count < 1 || *count > 1024)
                    problem(node->source(), where,
                            std::string("must be a whole number of ") + unit + " from 1 to 1024, e.g. 2");
                else
                    *into = static_cast<int>(*count);
            }
        }
        // "" leaves --mem to the partition (nodes without RealMemory).
        if (const auto memory = string_at(table, "memory", "mover.memory", false)) {
            if (!memory->empty() && !valid_slurm_memory(*memory))
                problem(table.get("memory")->source(), "mover.memory",
                        "must be a size as sbatch --mem takes it (a number and K, M, G or T), e.g. \"4G\", or \"\" "
                        "for the partition's default, not " +
                            quoted(*memory));
            else
                mover.memory = *memory;
        }
    }

    void load_dataset_tiers(const toml::table& table, const std::string& prefix, const Config& config, Dataset& dataset)
    {
        const std::string key = prefix + ".tiers";
        const toml::node* node = node_at(table, "tiers", key, true);
        if (!node)
            return;
        const toml::array* array = node->as_array();
        if (!array || array->empty()) {
            problem(node->source(), key, "must be a non-empty list of tier names, e.g. [\"shm\", \"ssd\"]");
            return;
        }
        for (const toml::node& element : *array) {
            if (!element.is_string()) {
                problem(element.source(), key, std::string("must list tier names, not ") + type_name(element.type()));
                continue;
            }
            const std::string tier(element.as_string()->get());
            if (!config.find_tier(tier))
                problem(element.source(), key,
                        "unknown tier " + quoted(tier) + did_you_mean(tier, config.tier_names()) +
                            " (known: " + join(config.tier_names(), ", ") + ")");
            else if (std::find(dataset.tiers.begin(), dataset.tiers.end(), tier) != dataset.tiers.end())
                problem(element.source(), key, "tier " + quoted(tier) + " is listed twice");
            else
                dataset.tiers.push_back(tier);
        }
    }

    Placement placement_at(const toml::table& table, const std::string& prefix)
    {
        return choice_at<Placement>(table, "placement", prefix + ".placement", placement_names(), Placement::Whole);
    }

    // placement = "split" on a dataset: it must be of several parts (tar
    // shards, a directory) and split in every node tier it may go to.
    void check_split_possible(const toml::table& table, const std::string& prefix, const Config& config,
                              const Dataset& dataset)
    {
        if (dataset.placement != Placement::Split)
            return;
        for (const std::string& name : dataset.tiers) {
            const Tier* tier = config.find_tier(name);
            if (!tier || tier->shared())
                continue;  // whole in a shared tier: one copy for all
            if (const auto verdict = policy::split_possible(dataset, *tier, dataset.known_format()); !verdict.allowed) {
                problem(table.get("placement")->source(), prefix + ".placement", verdict.reason);
                return;
            }
        }
    }

    void check_mode_fits_format(const toml::table& table, const std::string& prefix, const Dataset& dataset)
    {
        const toml::node* where = table.get("mode") ? table.get("mode") : table.get("source");
        if (const auto verdict =
                policy::mode_fits_declared_format(dataset.mode, dataset.known_format(),
                                                  is_part_glob(dataset.source, dataset.known_format()));
            !verdict.allowed)
            problem(where->source(), prefix + ".mode", verdict.reason);
    }

    // [[overrides]]: match keys, the tier, and the keys it overrides, each
    // checked as in [tiers.NAME].
    void load_overrides(const toml::table& root, Config& config)
    {
        const toml::node* node = root.get("overrides");
        if (!node)
            return;
        const toml::array* tables = node->as_array();
        if (!tables || !tables->is_array_of_tables()) {
            problem(node->source(), "overrides",
                    "must be tables written [[overrides]], each with match keys (partition, account, group, "
                    "user), a tier and what it changes (max_bytes, max_inodes, charge_memory)");
            return;
        }
        for (std::size_t i = 0; i < tables->size(); ++i)
            if (auto loaded = load_override(*tables->get(i)->as_table(), i, config))
                config.overrides.push_back(std::move(*loaded));
    }

    std::optional<Override> load_override(const toml::table& table, std::size_t index, const Config& config)
    {
        const std::string prefix = "overrides[" + std::to_string(index) + "]";
        check_override_keys(table, prefix);
        Override rule;
        rule.index = index;
        rule.line = static_cast<int>(table.source().begin.line);
        for (const auto& [key, into] : {std::pair{"partition", &rule.partition},
                                        {"account", &rule.account},
                                        {"group", &rule.group},
                                        {"user", &rule.user}})
            if (auto value = string_at(table, key, prefix + "." + key, false)) {
                if (trim(*value).empty() || *value != trim(*value))
                    problem(table.get(key)->source(), prefix + "." + key,
                            "must be a name without surrounding blanks, not " + quoted(*value));
                else
                    *into = *value;
            }
        if (rule.conditions().empty() && !has_problem_under(prefix))
            problem(table.source(), prefix,
                    "matches every job: give at least one of partition, account, group, user (to change a tier "
                    "for everyone, change [tiers.NAME])");
        load_override_values(table, prefix, rule);
        const auto tier = string_at(table, "tier", prefix + ".tier", true);
        if (!tier)
            return std::nullopt;
        if (!config.find_tier(*tier)) {
            if (!config.tiers.empty())
                problem(table.get("tier")->source(), prefix + ".tier",
                        "unknown tier " + quoted(*tier) + did_you_mean(*tier, config.tier_names()) +
                            " (known: " + join(config.tier_names(), ", ") + ")");
            return std::nullopt;
        }
        rule.tier = *tier;
        if (config.find_tier(*tier)->shared() && rule.charge_memory.value_or(false))
            problem(table.get("charge_memory")->source(), prefix + ".charge_memory",
                    "tier " + quoted(*tier) + " is shared, not in node memory: charge_memory is for node tiers");
        return rule;
    }

    // A tier key that may not be overridden gets its reason; any other
    // unknown key the usual did-you-mean.
    void check_override_keys(const toml::table& table, const std::string& prefix)
    {
        std::vector<std::string> allowed = kOverrideMatchKeys;
        allowed.push_back("tier");
        allowed.insert(allowed.end(), kOverridableKeys.begin(), kOverridableKeys.end());
        const std::vector<std::string> fixed = {"path",     "scope",     "cleanup",       "purge_days",
                                                "purge_by", "warn_days", "refresh_on_use"};
        for (auto&& [key, value] : table) {
            (void)value;
            const std::string name(key.str());
            if (std::find(fixed.begin(), fixed.end(), name) != fixed.end())
                problem(key.source(), prefix + "." + name,
                        "cannot be overridden: it decides where a tier's data lives and when it goes, which the "
                        "epilog must know without the job; define another tier (overridable: " +
                            join(kOverridableKeys, ", ") + ")");
            else if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
                problem(key.source(), prefix + "." + name,
                        "unknown key" + did_you_mean(name, allowed) + " (known: " + join(allowed, ", ") + ")");
        }
    }

    // The overridable keys, read as a tier reads them.
    void load_override_values(const toml::table& table, const std::string& prefix, Override& rule)
    {
        Tier scratch;
        load_max_bytes(table, prefix, scratch);
        if (scratch.max_bytes.is_set())
            rule.max_bytes = scratch.max_bytes;
        load_max_inodes(table, prefix, scratch);
        rule.max_inodes = scratch.max_inodes;
        rule.charge_memory = bool_at(table, "charge_memory", prefix + ".charge_memory");
        const bool sets_any = std::any_of(kOverridableKeys.begin(), kOverridableKeys.end(),
                                          [&](const std::string& key) { return table.contains(key); });
        if (!sets_any)
            problem(table.source(), prefix, "changes nothing: give at least one of " + join(kOverridableKeys, ", "));
    }

    void check_site_against_tiers(const Config& config)
    {
        const std::string& tier = config.site.default_tier;
        if (tier.empty() || config.find_tier(tier) || config.tiers.empty())
            return;
        problem(default_tier_where_, "site.default_tier",
                "unknown tier " + quoted(tier) + did_you_mean(tier, config.tier_names()) +
                    " (known: " + join(config.tier_names(), ", ") + ")");
    }
};

}  // namespace

Config parse_config(std::string_view text, const std::string& source_name)
{
    toml::table root;
    try {
        root = toml::parse(text, source_name);
    } catch (const toml::parse_error& e) {
        throw ConfigError({{source_name, static_cast<int>(e.source().begin.line), "", std::string(e.description())}});
    }
    Loader loader(source_name);
    Config config = loader.load(root);
    if (!loader.problems.empty()) {
        std::stable_sort(loader.problems.begin(), loader.problems.end(),
                         [](const ConfigProblem& a, const ConfigProblem& b) { return a.line < b.line; });
        throw ConfigError(std::move(loader.problems));
    }
    return config;
}

namespace {
constexpr std::size_t kMaxConfigBytes = 16 << 20;  // far beyond any real catalog

// The file's text.  Opened without blocking, so that a fifo (or a device)
// named by mistake is refused instead of hanging the command or the prolog;
// only a regular file of sane size is read.
std::string read_config_text(const std::string& path)
{
    const Fd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || fstat(fd.get(), &st) != 0)
        throw_cannot("read configuration file", path, errno);
    if (S_ISDIR(st.st_mode))
        throw Error("configuration file " + path + " is a directory: give the path of the TOML file");
    if (!S_ISREG(st.st_mode))
        throw Error("configuration file " + path + " is not a regular file: give the path of the TOML file");
    return read_all(fd.get(), kMaxConfigBytes, "configuration file " + path);
}
}  // namespace

Config load_config(const std::string& path)
{
    return parse_config(read_config_text(path), path);
}

}  // namespace dlstage
