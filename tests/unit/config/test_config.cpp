#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <sys/stat.h>

#include "config/config.hpp"
#include "lib/error.hpp"
#include "tests/unit/support/config_problems.hpp"
#include "tests/unit/support/error_of.hpp"
#include "tests/unit/support/files.hpp"
#include "tests/unit/support/tmpdir.hpp"

using namespace dlstage;
using dlstage::test::error_of;
using dlstage::test::problems_of;

namespace {
const std::string kTiers = R"(
[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_bytes = "50%"
max_inodes = 2000000

[tiers.ssd]
path = "/local/dlstage/%j"
cleanup = "job-end"
max_bytes = "100G"
)";


bool has_problem(const std::vector<ConfigProblem>& problems, int line, const std::string& key,
                 const std::string& fragment)
{
    return std::any_of(problems.begin(), problems.end(), [&](const ConfigProblem& p) {
        return p.line == line && p.key == key && p.message.find(fragment) != std::string::npos;
    });
}

std::string dump(const std::vector<ConfigProblem>& problems)
{
    std::string out;
    for (const auto& p : problems)
        out += p.str() + "\n";
    return out;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(config)

BOOST_AUTO_TEST_CASE(the_shipped_example_is_valid)
{
    const Config config = load_config(test::source_path("etc/dlstage.toml"));
    BOOST_TEST(config.tiers.size() == 3u);
    BOOST_TEST(config.find_tier("scratch")->purge.days == 90);
    BOOST_TEST(config.find_dataset("imagenet")->tiers.front() == "shm");
    BOOST_TEST(to_string(config.find_dataset("imagenet-shards")->known_format()) == "tar");
    BOOST_TEST(config.site.default_tier == "shm");
}

BOOST_AUTO_TEST_CASE(defaults_fill_what_is_left_out)
{
    const Config config = parse_config(kTiers + R"(
[datasets.cifar]
source = "/data/cifar10.sqfs"
tiers = ["ssd"]
)",
                                       "t.toml");
    BOOST_TEST(config.site.state_dir == "/var/spool/dlstage");
    BOOST_TEST(config.site.launcher == "srun --mpi=pmix --overlap --ntasks-per-node=1");
    BOOST_TEST(config.site.allow_paths);
    const Tier& shm = *config.find_tier("shm");
    BOOST_TEST(to_string(shm.scope) == "node");
    BOOST_TEST(to_string(shm.cleanup) == "job-end");
    BOOST_TEST(shm.max_bytes.str() == "50%");
    BOOST_TEST(*shm.max_inodes == 2000000u);
    BOOST_TEST(config.find_tier("ssd")->max_bytes.bytes == 100ull << 30);
    const Dataset& cifar = *config.find_dataset("cifar");
    BOOST_TEST(to_string(cifar.mode) == "copy");
    BOOST_TEST(to_string(cifar.known_format()) == "squashfs");
    BOOST_TEST(!cifar.immutable);  // only the site's explicit promise skips the source check
    BOOST_TEST(!config.find_dataset("nope"));
}

BOOST_AUTO_TEST_CASE(a_dataset_the_site_promises_immutable)
{
    const Config config = parse_config(kTiers + R"(
[datasets.imagenet]
source = "/data/imagenet"
tiers = ["ssd"]
immutable = true
)",
                                       "t.toml");
    BOOST_TEST(config.find_dataset("imagenet")->immutable);
    const auto problems = problems_of(kTiers + R"(
[datasets.a]
source = "/data/a"
tiers = ["ssd"]
immutable = "yes"
)");
    BOOST_TEST(has_problem(problems, 15, "datasets.a.immutable", "must be true or false, not a string"),
               dump(problems));
}

BOOST_AUTO_TEST_CASE(placement_split_on_a_dataset_or_a_node_tier)
{
    const Config config = parse_config(kTiers + R"(
[tiers.big]
path = "/local/big/%j"
placement = "split"

[datasets.in21k]
source = "/data/in21k/shard-*"
tiers = ["shm"]
placement = "split"
)",
                                       "t.toml");
    BOOST_TEST((config.find_dataset("in21k")->placement == Placement::Split));
    BOOST_TEST((config.find_tier("big")->placement == Placement::Split));
    BOOST_TEST((config.find_tier("shm")->placement == Placement::Whole));
    const auto problems = problems_of(kTiers + R"(
[tiers.scratch]
path = "/p/scratch/%u"
scope = "shared"
placement = "split"

[datasets.one]
source = "/data/one.sqfs"
tiers = ["shm"]
placement = "split"

[datasets.odd]
source = "/data/odd"
tiers = ["shm"]
placement = "halves"
)");
    BOOST_TEST(has_problem(problems, 15, "tiers.scratch.placement", "only a node tier splits datasets"),
               dump(problems));
    BOOST_TEST(has_problem(problems, 20, "datasets.one.placement", "dataset 'one' is one file (/data/one.sqfs)"),
               dump(problems));
    BOOST_TEST(has_problem(problems, 25, "datasets.odd.placement", "halves"), dump(problems));
    const auto named = problems_of(kTiers + "\n[tiers.split]\npath = \"/local/s/%j\"\n");
    BOOST_TEST(has_problem(named, 12, "tiers.split", "a tier may not be named 'split'"), dump(named));
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_errors_with_a_suggestion)
{
    const auto problems = problems_of(R"([site]
launchr = "srun"

[tiers.shm]
path = "/dev/shm/dlstage/%j"
max_byte = "10G"

[extra]
x = 1
)");
    BOOST_TEST(has_problem(problems, 2, "site.launchr", "did you mean 'launcher'?"), dump(problems));
    BOOST_TEST(has_problem(problems, 6, "tiers.shm.max_byte", "did you mean 'max_bytes'?"), dump(problems));
    BOOST_TEST(has_problem(problems, 8, "extra", "unknown key"), dump(problems));
    BOOST_TEST(problems.size() == 3u, dump(problems));
}

BOOST_AUTO_TEST_CASE(wrong_types_name_both_types)
{
    const auto problems = problems_of(kTiers + R"(
[datasets.a]
source = 3
tiers = "shm"
description = false
)");
    BOOST_TEST(has_problem(problems, 13, "datasets.a.source", "must be a string, not an integer"), dump(problems));
    BOOST_TEST(has_problem(problems, 14, "datasets.a.tiers", "non-empty list"), dump(problems));
    BOOST_TEST(has_problem(problems, 15, "datasets.a.description", "not a boolean"), dump(problems));
}

BOOST_AUTO_TEST_CASE(missing_required_keys_are_named)
{
    const auto problems = problems_of(R"([tiers.shm]
scope = "node"

[datasets.a]
description = "x"
)");
    BOOST_TEST(has_problem(problems, 1, "tiers.shm.path", "missing required key"), dump(problems));
    BOOST_TEST(has_problem(problems, 4, "datasets.a.source", "missing required key"), dump(problems));
    BOOST_TEST(has_problem(problems, 4, "datasets.a.tiers", "missing required key"), dump(problems));
}

BOOST_AUTO_TEST_CASE(no_tiers_at_all_is_an_error)
{
    const auto problems = problems_of("[site]\nstate_dir = \"/s\"\n");
    BOOST_TEST(problems.size() == 1u);
    BOOST_TEST(problems[0].message.find("no tiers defined") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(syntax_errors_carry_the_line)
{
    const auto problems = problems_of("[site]\nstate_dir = \"/s\"\nlauncher = \n");
    BOOST_TEST(problems.size() == 1u);
    BOOST_TEST(problems[0].line == 3);
    BOOST_TEST(problems[0].str().rfind("t.toml:3: ", 0) == 0u, problems[0].str());
}

BOOST_AUTO_TEST_CASE(enum_values_are_checked)
{
    const auto problems = problems_of(R"([tiers.shm]
path = "/dev/shm/dlstage/%j"
scope = "nod"
cleanup = "never"
)");
    BOOST_TEST(has_problem(problems, 3, "tiers.shm.scope", "not 'nod' (did you mean 'node'?)"), dump(problems));
    BOOST_TEST(has_problem(problems, 4, "tiers.shm.cleanup", "job-end, cache, keep"), dump(problems));
}

BOOST_AUTO_TEST_CASE(shared_tiers_are_per_user_and_kept_or_per_job_and_removed)
{
    const auto problems = problems_of(R"([tiers.a]
path = "/p/scratch/fixed"
scope = "shared"
cleanup = "keep"
[tiers.b]
path = "/p/scratch/%u/%j"
scope = "shared"
cleanup = "keep"
[tiers.c]
path = "/p/scratch/%u"
scope = "shared"
cleanup = "cache"
[tiers.ok]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"
purge_days = 90
purge_by = "max"
warn_days = 14
[tiers.ok2]
path = "/p/scratch/jobs/%j"
scope = "shared"
)");
    BOOST_TEST(has_problem(problems, 2, "tiers.a.path", "put %u in the path"), dump(problems));
    BOOST_TEST(has_problem(problems, 6, "tiers.b.path", "drop %j"), dump(problems));
    BOOST_TEST(has_problem(problems, 10, "tiers.c.cleanup", "\"keep\""), dump(problems));
    BOOST_TEST(problems.size() == 3u, dump(problems));
    const Config config = parse_config(R"([tiers.s]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"
purge_days = 90
purge_by = "ctime"
warn_days = 14
refresh_on_use = true
)",
                                       "t.toml");
    const Tier& s = config.tiers.at("s");
    BOOST_TEST(s.purge.days == 90);
    BOOST_TEST(s.purge.warn_days == 14);
    BOOST_TEST(to_string(s.purge.by) == "ctime");
    BOOST_TEST(s.purge.refresh_on_use);
}

BOOST_AUTO_TEST_CASE(watermarks_are_for_node_caches)
{
    const Config config = parse_config(R"([site]
cache_idle_days = 30
[tiers.shm]
path = "/dev/shm/dlstage/cache/%j"
cleanup = "cache"
max_bytes = "50%"
high_watermark = "85%"
low_watermark = "60%"
[tiers.ssd]
path = "/local/dlstage/cache/%j"
cleanup = "cache"
)",
                                       "t.toml");
    BOOST_TEST(config.tiers.at("shm").watermarks.high == 0.85);
    BOOST_TEST(config.tiers.at("shm").watermarks.low == 0.60);
    BOOST_TEST(config.tiers.at("ssd").watermarks.high == 0.90);  // the defaults
    BOOST_TEST(config.tiers.at("ssd").watermarks.low == 0.75);
    BOOST_TEST(config.site.cache_idle_days == 30);
    const auto problems = problems_of(R"([tiers.a]
path = "/local/a/%j"
high_watermark = "90%"
[tiers.b]
path = "/local/b/%j"
cleanup = "cache"
high_watermark = "70%"
low_watermark = "80%"
[tiers.c]
path = "/local/c/%j"
cleanup = "cache"
high_watermark = "90"
[site]
cache_idle_days = -1
)");
    BOOST_TEST(has_problem(problems, 1, "tiers.a", "for cleanup = \"cache\" tiers"), dump(problems));
    BOOST_TEST(has_problem(problems, 8, "tiers.b.low_watermark", "not be above high_watermark"), dump(problems));
    BOOST_TEST(has_problem(problems, 12, "tiers.c.high_watermark", "a percentage"), dump(problems));
    BOOST_TEST(has_problem(problems, 14, "site.cache_idle_days", ""), dump(problems));
    BOOST_TEST(problems.size() == 4u, dump(problems));
}

BOOST_AUTO_TEST_CASE(tiers_under_one_root_name_their_directories_the_same_way)
{
    const auto problems = problems_of(R"([tiers.a]
path = "/p/scratch/dlstage/%j"
scope = "shared"
[tiers.b]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"
[tiers.c]
path = "/local/dlstage/%j"
[tiers.d]
path = "/local/dlstage/%j-%n"
)");
    BOOST_TEST(has_problem(problems, 4, "tiers.b.path", "with tier 'a'"), dump(problems));
    BOOST_TEST(problems.size() == 1u, dump(problems));  // c and d both start with the job id
}

BOOST_AUTO_TEST_CASE(purge_keys_are_checked_and_only_for_shared_tiers)
{
    const auto problems = problems_of(R"([tiers.node]
path = "/dev/shm/%j"
purge_days = 90
[tiers.s]
path = "/p/scratch/%u"
scope = "shared"
cleanup = "keep"
purge_days = 0
purge_by = "atim"
[tiers.w]
path = "/p/scratch2/%u"
scope = "shared"
cleanup = "keep"
warn_days = 14
[tiers.x]
path = "/p/scratch3/%u"
scope = "shared"
cleanup = "keep"
purge_days = 10
warn_days = 14
refresh_on_use = "yes"
)");
    BOOST_TEST(has_problem(problems, 1, "tiers.node", "for scope = \"shared\" tiers"), dump(problems));
    BOOST_TEST(has_problem(problems, 8, "tiers.s.purge_days", "from 1 to 3650"), dump(problems));
    BOOST_TEST(has_problem(problems, 9, "tiers.s.purge_by", "did you mean 'atime'"), dump(problems));
    BOOST_TEST(has_problem(problems, 10, "tiers.w.purge_days", "need purge_days"), dump(problems));
    BOOST_TEST(has_problem(problems, 21, "tiers.x.refresh_on_use", "true or false"), dump(problems));
    BOOST_TEST(has_problem(problems, 15, "tiers.x.warn_days", "less than purge_days (10)"), dump(problems));
}

BOOST_AUTO_TEST_CASE(tier_rules)
{
    const auto problems = problems_of(R"([tiers.a]
path = "/dev/shm/dlstage"
[tiers.b]
path = "/p/shared/%n/%j"
scope = "shared"
[tiers.c]
path = "/x/%j"
max_bytes = "150%"
max_inodes = -1
[tiers."bad name"]
path = "/y/%j"
[tiers.d]
path = "/cache/%u"
cleanup = "cache"
[tiers.e]
path = "/cache2/%j"
cleanup = "cache"
)");
    BOOST_TEST(has_problem(problems, 2, "tiers.a.path", "needs %j"), dump(problems));
    BOOST_TEST(has_problem(problems, 4, "tiers.b.path", "drop %n"), dump(problems));
    BOOST_TEST(has_problem(problems, 8, "tiers.c.max_bytes", "at most 100%"), dump(problems));
    BOOST_TEST(has_problem(problems, 9, "tiers.c.max_inodes", "positive integer"), dump(problems));
    BOOST_TEST(has_problem(problems, 10, "tiers.bad name", "a tier name must be"), dump(problems));
    BOOST_TEST(has_problem(problems, 13, "tiers.d.path", "cleanup = \"cache\" needs %j"), dump(problems));
    BOOST_TEST(problems.size() == 6u, dump(problems));  // tiers.e is fine
}

BOOST_AUTO_TEST_CASE(max_bytes_as_a_bare_number_below_1_MiB_is_questioned)
{
    const auto problems = problems_of(R"([tiers.a]
path = "/a/%j"
max_bytes = 512
[tiers.b]
path = "/b/%j"
max_bytes = "512"
[tiers.c]
path = "/c/%j"
max_bytes = "512K"
[tiers.d]
path = "/d/%j"
max_bytes = "1000B"
[tiers.e]
path = "/e/%j"
max_bytes = 107374182400
[tiers.f]
path = "/f/%j"
max_bytes = "0B"
[tiers.g]
path = "/g/%j"
max_bytes = 1.5e9
[tiers.h]
path = "/h/%j"
max_bytes = "4Mx"
[tiers.i]
path = "/i/%j"
max_inodes = 2.5
)");
    BOOST_TEST(has_problem(problems, 3, "tiers.a.max_bytes",
                           "512 is 512 bytes: did you mean \"512M\"? (write \"512B\" if you really mean bytes)"),
               dump(problems));
    BOOST_TEST(has_problem(problems, 6, "tiers.b.max_bytes", "\"512\" is 512 bytes: did you mean \"512M\"?"),
               dump(problems));
    BOOST_TEST(has_problem(problems, 18, "tiers.f.max_bytes", "a limit of 0 bytes lets nothing be staged"),
               dump(problems));
    BOOST_TEST(has_problem(problems, 21, "tiers.g.max_bytes", "must be a size such as"), dump(problems));
    BOOST_TEST(has_problem(problems, 24, "tiers.h.max_bytes", "unknown unit 'Mx'"), dump(problems));
    BOOST_TEST(has_problem(problems, 27, "tiers.i.max_inodes", "positive integer"), dump(problems));
    BOOST_TEST(problems.size() == 6u, dump(problems));  // c, d and e are meant
}

BOOST_AUTO_TEST_CASE(dataset_rules)
{
    const auto problems = problems_of(kTiers + R"(
[datasets.a]
source = "relative/path"
tiers = ["shm"]
[datasets.b]
source = "/d/tree"
tiers = ["shm", "nvme", "shm"]
mode = "extract"
[datasets.c]
source = "/d/shards-*.tar"
tiers = ["ssd"]
mode = "mount"
[datasets.datasets]
source = "/d/x"
tiers = ["ssd"]
[datasets.img-net]
source = "/d/y"
tiers = ["ssd"]
[datasets.img_net]
source = "/d/z"
tiers = ["ssd"]
[datasets.e]
source = "/d/tree2"
format = "tar"
mode = "extract"
tiers = ["ssd"]
)");
    BOOST_TEST(has_problem(problems, 13, "datasets.a.source", "absolute path"), dump(problems));
    BOOST_TEST(has_problem(problems, 17, "datasets.b.tiers", "unknown tier 'nvme'"), dump(problems));
    BOOST_TEST(has_problem(problems, 17, "datasets.b.tiers", "listed twice"), dump(problems));
    BOOST_TEST(has_problem(problems, 18, "datasets.b.mode", "needs tar shards or a squashfs image"), dump(problems));
    BOOST_TEST(has_problem(problems, 22, "datasets.c.mode", "needs a squashfs image"), dump(problems));
    BOOST_TEST(has_problem(problems, 23, "datasets.datasets", "reserved"), dump(problems));
    BOOST_TEST(has_problem(problems, 29, "datasets.img_net", "DLSTAGE_IMG_NET"), dump(problems));
    BOOST_TEST(problems.size() == 7u, dump(problems));  // datasets.e: format = "tar" makes extract fine
}

BOOST_AUTO_TEST_CASE(site_rules)
{
    const auto problems = problems_of(R"([site]
state_dir = "spool"
launcher = "  "
default_tier = "shmm"
allow_paths = "yes"
)" + kTiers);
    BOOST_TEST(has_problem(problems, 2, "site.state_dir", "absolute path"), dump(problems));
    BOOST_TEST(has_problem(problems, 3, "site.launcher", "must not be empty"), dump(problems));
    BOOST_TEST(has_problem(problems, 4, "site.default_tier", "did you mean 'shm'?"), dump(problems));
    BOOST_TEST(has_problem(problems, 5, "site.allow_paths", "true or false"), dump(problems));
}

// The stager's watchdog bound: a few minutes by default, 0 turns it off,
// anything else a clear problem.
BOOST_AUTO_TEST_CASE(stall_timeout_defaults_to_five_minutes_and_is_checked)
{
    BOOST_TEST(parse_config(kTiers, "t.toml").site.stall_timeout == 300);
    BOOST_TEST(parse_config("[site]\nstall_timeout = 0\n" + kTiers, "t.toml").site.stall_timeout == 0);
    BOOST_TEST(parse_config("[site]\nstall_timeout = 45\n" + kTiers, "t.toml").site.stall_timeout == 45);
    const auto problems = problems_of("[site]\nstall_timeout = \"5m\"\n" + kTiers);
    BOOST_TEST(has_problem(problems, 2, "site.stall_timeout", "whole number"), dump(problems));
}

BOOST_AUTO_TEST_CASE(gc_keys_default_and_are_checked)
{
    const Config defaults = parse_config(kTiers, "t.toml");
    BOOST_TEST(defaults.site.gc_grace == 300);
    BOOST_TEST(defaults.site.gc_records_days == 30);
    const Config set = parse_config("[site]\ngc_grace = 0\ngc_records_days = 0\n" + kTiers, "t.toml");
    BOOST_TEST(set.site.gc_grace == 0);
    BOOST_TEST(set.site.gc_records_days == 0);
    const auto problems = problems_of(R"([site]
gc_grace = -1
gc_records_days = "30"
)" + kTiers);
    BOOST_TEST(has_problem(problems, 2, "site.gc_grace", "whole number from 0 to 604800 seconds"), dump(problems));
    BOOST_TEST(has_problem(problems, 3, "site.gc_records_days", "whole number from 0 to 36500 days"), dump(problems));
}

BOOST_AUTO_TEST_CASE(problems_are_sorted_by_line_and_summarised)
{
    try {
        parse_config("[zzz]\n[tiers.a]\npath = \"x\"\n", "t.toml");
        BOOST_FAIL("no exception");
    } catch (const ConfigError& e) {
        BOOST_TEST(e.problems().size() == 2u);
        BOOST_TEST(e.problems()[0].line <= e.problems()[1].line);
        BOOST_TEST(std::string(e.what()).find("and 1 more: run 'dlstage check-config'") != std::string::npos);
    }
}

BOOST_AUTO_TEST_CASE(unreadable_file_is_an_error_naming_it)
{
    try {
        load_config("/nonexistent/dlstage.toml");
        BOOST_FAIL("no exception");
    } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "cannot read configuration file /nonexistent/dlstage.toml: No such file or directory");
    }
}

// Found by tests/fuzz: a quoted key or a parser message may hold a newline.
BOOST_AUTO_TEST_CASE(every_problem_is_one_line)
{
    const auto problems = problems_of("[tiers.\"a\\nb\"]\npath = \"/x/%j\"\n");
    BOOST_TEST_REQUIRE(problems.size() == 1u);
    BOOST_TEST(problems[0].str() == "t.toml:1: tiers.a\\x0ab: a tier name must be letters, digits, '_' or '-', "
                                    "starting with a letter or digit");
    const auto syntax = problems_of("x = -i\rnf\n");
    BOOST_TEST_REQUIRE(syntax.size() == 1u);
    BOOST_TEST(syntax[0].str().find('\r') == std::string::npos, syntax[0].str());
    BOOST_TEST(syntax[0].str().find("\\x0d") != std::string::npos, syntax[0].str());
}

BOOST_AUTO_TEST_CASE(a_directory_fifo_or_huge_file_is_refused_without_blocking)
{
    const test::TempDir dir;
    BOOST_TEST(error_of([&] { load_config(dir.path()); }) ==
               "configuration file " + dir.path() + " is a directory: give the path of the TOML file");
    const std::string fifo = dir / "fifo.toml";
    BOOST_TEST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    // No writer: a blocking open would hang here for ever.
    BOOST_TEST(error_of([&] { load_config(fifo); }) ==
               "configuration file " + fifo + " is not a regular file: give the path of the TOML file");
    const std::string huge = dir.write("huge.toml", "# " + std::string(16 << 20, 'x') + "\n");
    BOOST_TEST(error_of([&] { load_config(huge); }) == "configuration file " + huge + " is larger than 16777216 bytes");
}

BOOST_AUTO_TEST_CASE(env_names)
{
    BOOST_TEST(dataset_env_name("imagenet") == "DLSTAGE_IMAGENET");
    BOOST_TEST(dataset_env_name("coco.2017-val") == "DLSTAGE_COCO_2017_VAL");
}

BOOST_AUTO_TEST_CASE(a_dataset_only_mover_nodes_reach)
{
    const std::string tiers = R"([tiers.shm]
path = "/dev/shm/dlstage/%j"

[tiers.scratch]
path = "/p/scratch/dlstage/%u"
scope = "shared"
cleanup = "keep"
)";
    const Config config = parse_config(tiers + R"(
[mover]
partition = "xfer"
time_limit = "2:00:00"
nodes = 2
memory = "16G"

[datasets.in21k]
source = "/p/largedata/in21k"
tiers = ["shm", "scratch"]
reach = "mover"
via = "scratch"
)",
                                       "t.toml");
    const Dataset& in21k = *config.find_dataset("in21k");
    BOOST_TEST(to_string(in21k.reach) == "mover");
    BOOST_TEST(in21k.via == "scratch");
    BOOST_TEST(config.mover.partition == "xfer");
    BOOST_TEST(config.mover.time_limit == "2:00:00");
    BOOST_TEST(config.mover.nodes == 2);
    BOOST_TEST(config.mover.account.empty());
    BOOST_TEST(config.mover.memory == "16G");
    BOOST_TEST(config.mover.cpus_per_task == 2);  // the default

    // Lines: 1-7 the tiers, 8 blank, then the text below from line 9.
    const auto no_mover = problems_of(tiers + R"(
[datasets.a]
source = "/p/largedata/a"
tiers = ["shm", "scratch"]
reach = "mover"
)");
    BOOST_TEST(has_problem(no_mover, 12, "datasets.a.reach", "needs a [mover] table with the partition"),
               dump(no_mover));
    BOOST_TEST(has_problem(no_mover, 12, "datasets.a.via", "needs via, the shared tier"), dump(no_mover));

    const auto bad = problems_of(tiers + R"(
[mover]
partition = "x fer"
nodes = 0
qos = ""

[datasets.a]
source = "/p/largedata/a"
tiers = ["shm"]
reach = "mover"
via = "shm"

[datasets.b]
source = "/p/largedata/b"
tiers = ["shm"]
reach = "mover"
via = "scratch"

[datasets.c]
source = "/data/c"
tiers = ["shm"]
via = "scratch"
)");
    BOOST_TEST(has_problem(bad, 10, "mover.partition", "without blanks, commas or '='"), dump(bad));
    BOOST_TEST(has_problem(bad, 11, "mover.nodes", "from 1 to 1024"), dump(bad));
    BOOST_TEST(has_problem(bad, 12, "mover.qos", "not ''"), dump(bad));
    BOOST_TEST(has_problem(bad, 18, "datasets.a.via", "must name a tier with scope = \"shared\", not 'shm'"),
               dump(bad));
    BOOST_TEST(has_problem(bad, 24, "datasets.b.via", "tier 'scratch' must also be one of the dataset's tiers"),
               dump(bad));
    BOOST_TEST(!has_problem(bad, 17, "datasets.a.reach", "needs a [mover] table"), dump(bad));  // there is one
    BOOST_TEST(has_problem(bad, 29, "datasets.c.via", "only a dataset with reach = \"mover\" passes through"),
               dump(bad));

    const auto sizes = problems_of(tiers + R"(
[mover]
partition = "xfer"
cpus_per_task = 0
memory = "lots"
)");
    BOOST_TEST(has_problem(sizes, 11, "mover.cpus_per_task", "whole number of CPUs from 1 to 1024"), dump(sizes));
    BOOST_TEST(has_problem(sizes, 12, "mover.memory", "as sbatch --mem takes it"), dump(sizes));
    for (const char* good : {"4G", "512M", "2000", "1t", ""})
        BOOST_TEST(problems_of(tiers + "\n[mover]\npartition = \"xfer\"\nmemory = \"" + good + "\"\n").empty(), good);
}

BOOST_AUTO_TEST_SUITE_END()
