// tier/cache_features: whether an entry still attracts jobs, looked at as
// its owner; and the features set through scontrol within their bound,
// with scontrol stand-ins on PATH (a controller that never answers, one
// that does).  The real slurmctld is asked in tests/integration/62-locality.
// Root only: the entries are another user's.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <set>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "job/copy_record.hpp"
#include "job/state_record.hpp"
#include "lib/strings.hpp"
#include "tests/unit/support/cache_fixtures.hpp"
#include "tests/unit/support/files.hpp"
#include "tier/cache_features.hpp"
#include "tier/cache_records.hpp"

using namespace dlstage;

namespace {
// A config whose catalog has dataset "d" from `source`, locality on.
Config locality_config(const test::Cache& c, const std::string& source)
{
    Config config;
    config.site.state_dir = c.state;
    config.locality.node_features = true;
    Dataset d;
    d.name = "d";
    d.source = source;
    config.datasets["d"] = d;
    return config;
}

// The ready record of nobody's entry "d", made at `made`, of `source`.
void ready_record(const test::Cache& c, const std::string& source, std::int64_t made)
{
    CopyRecord record;
    record.ready.dataset = "d";
    record.ready.tier = "cache";
    record.ready.source = source;
    record.ready.path = c.user_dir + "/d";
    record.identity = "0123456789abcdef";
    record.mode = "copy";
    record.made = made;
    const std::string written = c.tmp / "ready.toml";  // write_record writes only into the caller's directories
    write_record(written, copy_record_table(record));
    const std::string path = c.user_dir + "/.ready-d.toml";
    BOOST_REQUIRE(::rename(written.c_str(), path.c_str()) == 0);
    c.give(path);
}

NodeCacheEntry owner_of(const test::Cache& c)
{
    NodeCacheEntry owner;
    owner.user = "nobody";
    owner.uid = c.nobody->pw_uid;
    owner.gid = c.nobody->pw_gid;
    return owner;
}

std::string refusal(const EntryAttraction& attraction)
{
    return attraction.refused.empty() ? "" : attraction.refused.front().second;
}

// PATH led to a directory whose scontrol is `script`, for one scope.
struct ScontrolStandIn {
    test::TempDir dir;
    std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    explicit ScontrolStandIn(const std::string& script)
    {
        const std::string program = dir.write("scontrol", "#!/bin/sh\n" + script + "\n");
        ::chmod(program.c_str(), 0755);
        ::setenv("PATH", (dir.path() + ":" + old_path).c_str(), 1);
    }
    ~ScontrolStandIn() { ::setenv("PATH", old_path.c_str(), 1); }
};

bool process_gone(pid_t pid)
{
    for (int i = 0; i < 200; ++i) {
        if (::kill(pid, 0) != 0 && errno == ESRCH)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(cache_features)

BOOST_AUTO_TEST_CASE(an_entry_attracts_until_its_source_changes_after_it_was_cached)
{
    if (!test::is_root())
        return;
    test::Cache c;
    const std::string source = c.tmp.write("src.bin", "data");
    struct stat st {};
    BOOST_REQUIRE(::stat(source.c_str(), &st) == 0);
    const Config config = locality_config(c, source);
    const NodeCacheEntry owner = owner_of(c);

    ready_record(c, source, st.st_ctim.tv_sec + 10);
    EntryAttraction seen = attraction_of(config, c.tier, owner, {"d"}, 10);
    BOOST_TEST(seen.told);
    BOOST_TEST(seen.attracting == std::vector<std::string>{"d"}, boost::test_tools::per_element());
    BOOST_TEST(seen.refused.empty());

    ready_record(c, source, st.st_ctim.tv_sec - 10);  // cached before the source's last change
    seen = attraction_of(config, c.tier, owner, {"d"}, 10);
    BOOST_TEST(seen.attracting.empty());
    BOOST_TEST(refusal(seen) == "its source changed since it was cached here");

    ready_record(c, c.tmp / "elsewhere.bin", st.st_ctim.tv_sec + 10);
    BOOST_TEST(refusal(attraction_of(config, c.tier, owner, {"d"}, 10)) ==
               "the catalog names another source for it now");

    ready_record(c, source, st.st_ctim.tv_sec + 10);
    BOOST_REQUIRE(::unlink(source.c_str()) == 0);
    BOOST_TEST(refusal(attraction_of(config, c.tier, owner, {"d"}, 10)) == "its source is gone or unreadable");

    BOOST_REQUIRE(::unlink((c.user_dir + "/.ready-d.toml").c_str()) == 0);
    BOOST_TEST(refusal(attraction_of(config, c.tier, owner, {"d"}, 10)) == "its ready record could not be read");
}

BOOST_AUTO_TEST_CASE(a_controller_that_never_answers_costs_the_bound_and_leaves_no_child)
{
    if (!test::is_root())
        return;
    test::Cache c;
    const Config config = locality_config(c, c.tmp / "src.bin");
    const std::string pid_file = c.tmp / "scontrol.pid";
    // Its own child sleeps: the bound must end that one too.
    const ScontrolStandIn hangs("sleep 120 & echo $! > " + pid_file + "; wait");
    const auto start = std::chrono::steady_clock::now();
    const std::string problem = change_node_features(config, "n9", {"dls_d_u65534"}, policy::FeatureChange::Add, 3);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST(starts_with(problem, "node features not changed: "), problem);
    BOOST_TEST(took < 60.0);  // far under the stand-in's 120 s: bounded (the bound is 3 s)
    const std::string pid = trim(test::content_of(pid_file));
    BOOST_REQUIRE(!pid.empty());
    BOOST_TEST(process_gone(static_cast<pid_t>(std::stol(pid))));
    BOOST_TEST(recorded_node_features(c.state, "n9").empty());  // nothing recorded as set
}

BOOST_AUTO_TEST_CASE(features_set_beside_the_sites_and_not_asked_again_when_unchanged)
{
    if (!test::is_root())
        return;
    test::Cache c;
    const Config config = locality_config(c, c.tmp / "src.bin");
    const std::string updates = c.tmp / "updates";
    const ScontrolStandIn answers("case \"$2\" in\n"
                                  "show) echo 'NodeName=n9 Arch=x86_64 AvailableFeatures=site_a,dls_old_u1 "
                                  "ActiveFeatures=site_a,dls_old_u1 State=IDLE ThreadsPerCore=1' ;;\n"
                                  "*) echo \"$*\" >> " +
                                  updates + " ;;\nesac");
    BOOST_TEST(change_node_features(config, "n9", {"dls_d_u65534"}, policy::FeatureChange::Add, 10) == "");
    BOOST_TEST(trim(test::content_of(updates)) == "update NodeName=n9 AvailableFeatures=site_a,dls_d_u65534,dls_old_u1 "
                                                  "ActiveFeatures=site_a,dls_d_u65534,dls_old_u1");
    BOOST_TEST(recorded_node_features(c.state, "n9") == (std::set<std::string>{"dls_d_u65534", "dls_old_u1"}));
    // The same again: root's record says nothing changes, Slurm is not asked.
    BOOST_REQUIRE(::unlink(updates.c_str()) == 0);
    BOOST_TEST(change_node_features(config, "n9", {"dls_d_u65534"}, policy::FeatureChange::Add, 10) == "");
    BOOST_TEST(!test::exists(updates));
    // gc's Replace asks and sets them all: the site's kept, ours as gc found them.
    BOOST_TEST(change_node_features(config, "n9", {"dls_d_u65534"}, policy::FeatureChange::Replace, 10) == "");
    BOOST_TEST(trim(test::content_of(updates)) ==
               "update NodeName=n9 AvailableFeatures=site_a,dls_d_u65534 ActiveFeatures=site_a,dls_d_u65534");
}

BOOST_AUTO_TEST_SUITE_END()
