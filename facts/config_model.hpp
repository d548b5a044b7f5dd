// The site configuration's model (dlstage.toml): site settings, storage
// tiers and the dataset catalog as plain types, and what they answer of
// themselves.  The policies decide over these types, so they sit below the
// policies; reading and checking a file is config/config.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/dataset_format.hpp"
#include "facts/names.hpp"
#include "facts/path_template.hpp"
#include "lib/size.hpp"

namespace dlstage {

enum class Scope { Node, Shared };
enum class Cleanup { JobEnd, Cache, Keep };
enum class Mode { Copy, Extract, Mount };
// Which of a file's times the site's purge tool counts its age from; Max:
// the latest of atime, mtime and ctime.
enum class PurgeBy { Atime, Mtime, Ctime, Max };
// Where a dataset's source can be read: on the compute nodes (the stager
// reads it in the job), or only on the mover partition's nodes (LARGEDATA),
// from where a mover job copies it into a shared tier first.
enum class Reach { Compute, Mover };
// How a dataset is laid over a job's nodes in a node tier: whole on each,
// or split, each node holding its share (policies/split_placement).
enum class Placement { Whole, Split };

// Each value's name in dlstage.toml, in the order dlstage.toml(5) gives
// them: config/config reads these tables, to_string says the names.
const NameTable<Scope>& scope_names();
const NameTable<Cleanup>& cleanup_names();
const NameTable<Mode>& mode_names();
const NameTable<PurgeBy>& purge_by_names();
const NameTable<Reach>& reach_names();
const NameTable<Placement>& placement_names();

std::string to_string(Scope scope);
std::string to_string(Cleanup cleanup);
std::string to_string(Mode mode);
std::string to_string(PurgeBy purge_by);
std::string to_string(Reach reach);
std::string to_string(Placement placement);

// A site's purge of a file system (SCRATCH): files whose age passes `days`
// are deleted by the site's own tool, not by dlstage.
struct PurgeRule {
    int days = 0;  // 0: no purge
    PurgeBy by = PurgeBy::Atime;
    int warn_days = 0;  // warn at submit when a copy will be purged this soon
    // Set every file's atime to now when a job reuses a copy (off: dlstage
    // does not dodge the site's purge unless the site says so).
    bool refresh_on_use = false;
};

// A node cache's eviction thresholds (cleanup = "cache"): shares of
// max_bytes and max_inodes, 0 < low <= high <= 1 (policies/cache_eviction).
struct Watermarks {
    double high = 0.90;
    double low = 0.75;
};

struct Tier {
    std::string name;
    PathTemplate path;
    Scope scope = Scope::Node;
    Cleanup cleanup = Cleanup::JobEnd;
    ByteLimit max_bytes;
    std::optional<std::uint64_t> max_inodes;
    PurgeRule purge;        // scope = "shared" only
    Watermarks watermarks;  // cleanup = "cache" only
    // Do staged bytes count against the job's memory?  tmpfs pages are
    // charged to the memory cgroup of the process that writes them, and the
    // stager runs in the job's step.  Unset: the default, charged_by_default().
    std::optional<bool> charge_memory;
    // placement = "split": datasets of tar shards or directories staged
    // here are split over the job's nodes unless the request says whole.
    Placement placement = Placement::Whole;
    // Where each key's value comes from, for keys not left at their default:
    // "tiers.shm", or an override's label (see Override::label).
    std::map<std::string, std::string> origin;

    // Its kind, as the rest of dlstage asks it (scope and cleanup together:
    // a new kind of tier answers these here, and the prolog, the epilog, gc,
    // status and the stager follow):
    // one copy that every node of a job reads (scope = "shared");
    bool shared() const { return scope == Scope::Shared; }
    // a node tier whose copies stay as a cache's entries, evicted under its
    // watermarks (cleanup = "cache");
    bool node_cache() const { return scope == Scope::Node && cleanup == Cleanup::Cache; }
    // copies kept for the user's later jobs, never gc's (cleanup = "keep");
    bool keeps_copies() const { return cleanup == Cleanup::Keep; }
    // a job's copy that goes with its job directory at job end.
    bool gone_at_job_end() const { return cleanup == Cleanup::JobEnd; }

    bool charges_memory() const { return charge_memory.value_or(charged_by_default()); }
    // A node tier under /dev/shm: the tmpfs every Linux node has (and the one
    // job_container/tmpfs makes private per job).  Other tmpfs tiers say so.
    bool charged_by_default() const;
    // origin of key, or "default".
    std::string origin_of(const std::string& key) const;
};

// [[overrides]]: other limits for one tier when a job matches every match
// key the table gives (policies/overrides decides which table wins).
struct Override {
    std::size_t index = 0;  // its place among the [[overrides]] tables, from 0
    int line = 0;
    std::string tier;
    // Match keys: "" is no condition.  group: one of the user's Unix groups.
    std::string partition, account, group, user;
    std::optional<ByteLimit> max_bytes;
    std::optional<std::uint64_t> max_inodes;
    std::optional<bool> charge_memory;

    // "overrides[2] (partition=gpu, line 31)": where a value came from.
    std::string label() const;
    // "partition=gpu, user=alice"
    std::string conditions() const;
};

// The tier keys an override may set; the others (path, scope, cleanup,
// purge_*) shape where data lives and when it goes, which the epilog and
// gc must agree on without knowing the job: a different tier is the way.
inline const std::vector<std::string> kOverridableKeys = {"max_bytes", "max_inodes", "charge_memory"};
inline const std::vector<std::string> kOverrideMatchKeys = {"partition", "account", "group", "user"};

struct Dataset {
    std::string name;
    std::string source;  // absolute path, or a glob for tar shards
    Format format = Format::Auto;
    Mode mode = Mode::Copy;
    std::vector<std::string> tiers;  // allowed tiers, in order of preference
    std::string description;
    bool from_catalog = true;  // false: an absolute path the user gave
    // How --stage-data names it: its catalog name, or the path.
    const std::string& requested_as() const { return from_catalog ? name : source; }
    // The site's promise that no file of the source is ever rewritten in
    // place: a kept copy planned from a current manifest is then reused
    // without a stat of every source file (stager/plan/source_check).
    bool immutable = false;
    // reach = "mover": the compute nodes cannot see the source; a mover job
    // copies it into the shared tier `via`, and jobs stage from that copy.
    Reach reach = Reach::Compute;
    std::string via;  // a tier with scope = "shared"; reach = "mover" only
    // placement = "split": split over a job's nodes in any node tier,
    // unless the request says whole.
    Placement placement = Placement::Whole;

    // The format once "auto" is decided from the source name
    // (format_from_name): Auto when only a stat can tell.
    Format known_format() const;
};

struct SiteSettings {
    std::string state_dir = "/var/spool/dlstage";
    std::string manifest_dir;  // "": state_dir/manifests (see manifests())
    std::string launcher = "srun --mpi=pmix --overlap --ntasks-per-node=1";
    std::string default_tier;  // empty: a dataset's first allowed tier
    bool allow_paths = true;   // may users stage absolute paths not in the catalog?
    // Seconds the prolog's or epilog's own work may take on a node; what is
    // not done by then (a hung mount) is logged and left, so the node is not
    // drained by Slurm's PrologEpilogTimeout.  Keep it well below that.
    int prolog_epilog_timeout = 60;
    // Seconds a stager rank may hear nothing from a peer before it stops the
    // staging, naming the silent node (stager/steps/watchdog); 0: never.
    int stall_timeout = 300;
    // `dlstage gc`: seconds a directory of an ended job must have been left
    // unchanged before it goes (a prolog may be making one for a job too new
    // for Slurm's answer; clocks of a shared tier's server may differ), and
    // days a job's records are kept after its end (0: for ever).
    int gc_grace = 300;
    int gc_records_days = 30;
    // Days a node cache entry may go unused before `dlstage gc` removes it
    // whatever the watermarks say (0: only the watermarks evict).
    int cache_idle_days = 0;

    // Where `dlstage catalog scan` writes dataset manifests (NAME.manifest).
    std::string manifests() const;
};

// [mover]: where mover jobs run (two-hop staging of reach = "mover"
// datasets).  The mover job is submitted as the user with these options.
struct MoverSettings {
    std::string partition;   // "": no mover partition configured
    std::string account;     // "": the user's default
    std::string qos;         // "": the partition's default
    std::string time_limit;  // "": the partition's default; Slurm's time format
    int nodes = 1;           // mover nodes that read the source in parallel
    // Per mover node: the stager's readers and writers, and its plan (about
    // 100 bytes an entry: 1.3 GiB for 13 M entries) beside its buffers.
    int cpus_per_task = 2;
    std::string memory = "4G";  // sbatch --mem; "": the partition's default

    bool configured() const { return !partition.empty(); }
};

// [locality]: what a node's cache holds shown to Slurm as node features
// (policies/node_features), so that jobs may prefer the nodes holding
// their datasets.  Off unless node_features is set.
struct LocalitySettings {
    bool node_features = false;
    std::string feature_prefix = "dls_";  // every feature of dlstage's begins so; others are the site's
    int feature_max_length = 64;          // longer names are cut and end in a hash of the whole
};

struct Config {
    std::string file;  // where it was loaded from
    SiteSettings site;
    MoverSettings mover;
    LocalitySettings locality;
    std::map<std::string, Tier> tiers;
    std::map<std::string, Dataset> datasets;
    std::vector<Override> overrides;  // in file order

    const Tier* find_tier(std::string_view name) const;
    const Dataset* find_dataset(std::string_view name) const;
    std::vector<std::string> tier_names() const;
    std::vector<std::string> dataset_names() const;
    // Does any [[overrides]] table match on a Unix group?  (Only then are
    // the user's groups looked up: in the prolog an NSS lookup may hang.)
    bool matches_groups() const;
};

// DLSTAGE_<NAME>: the name upper-cased, every other character '_'.
std::string dataset_env_name(std::string_view dataset_name);

}  // namespace dlstage
